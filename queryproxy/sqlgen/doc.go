// Package sqlgen turns a checked IQL statement (package iql's AST) into SQL text and bind
// arguments for one SQL dialect. It is pure: no I/O, no database, no Caddy.
//
// It owns the translation and the comparison rules below, and nothing else: which tables a
// caller may read or write, and whose rows, is the policy's decision, handed in through
// Options. It depends only on the standard library and package iql; it must not import a
// database driver, an engine, the handler or Caddy. (Its tests open SQLite and, when one is
// configured, PostgreSQL to prove the rules on real engines.)
//
// Values only ever travel as bind arguments; identifiers only ever come from the Catalog,
// resolved case-insensitively and then quoted by the dialect. Text from a request is never
// concatenated into SQL.
//
// # Identifiers
//
// Every table and column name in a statement is looked up in the Catalog (ASCII
// case-insensitively, Catalog.Table and Table.Column) and the catalog's spelling is written,
// in double quotes with an inner double quote doubled, on both dialects. A name the catalog
// does not have is an *UnknownError. "SELECT *" is written out as the catalog's column list.
// Resolve holds a statement to the same rule for a target that takes IQL rather than SQL
// (the iq engine's upstream): it returns the statement with every name in the catalog's
// spelling, "*" written out, and a select's result columns.
//
// # Values
//
// Placeholders are "?" on SQLite and "$1", "$2", ... on PostgreSQL; LIMIT is a placeholder
// too. Literals become arguments as follows:
//
//   - a string: string;
//   - a number whose text is an integer that fits int64: int64, on both dialects;
//   - any other number on SQLite: float64 when the float prints back as the same decimal
//     (strconv.FormatFloat(f, 'f', -1, 64) equals the text without redundant zeros, so
//     "37.480" goes as 37.48), otherwise the exact text as a string, which SQLite converts
//     by the column's affinity;
//   - any other number on PostgreSQL: the exact text as a string, the placeholder cast
//     "$n::numeric", so no digit is lost to a float;
//   - a boolean: int64 1 or 0 on SQLite (which has no boolean type), bool on PostgreSQL;
//   - NULL (INSERT and UPDATE values only): nil.
//
// The column's catalog Type is checked first, where engines would otherwise disagree or
// fail inside the driver: a Boolean column takes only TRUE and FALSE (and NULL); a column of
// any other known type takes no boolean; a DateTime or Binary column takes no number
// (PostgreSQL cannot bind one to a timestamp or bytea, where SQLite would compare a number
// with text); a number compared with or written to a String
// column is bound as its exact text ("007" stays "007"), since SQLite would compare it as
// text anyway and PostgreSQL cannot take a number for text. Anything else refused is a
// *StatementError. Strings for number or time columns are left to the engine's conversion.
//
// # Comparison rules
//
// These are the query service's comparison rules, the same on every engine (on
// PostgreSQL, for a String column whose type is not text, see Column.Text: "=" on a uuid
// reads the value as a uuid, and char(n) ignores trailing spaces):
//
//   - "=", "<>" and IN are exact: byte-wise and case-sensitive ("BHP" <> "bhp").
//   - "<", "<=", ">", ">=", BETWEEN and ORDER BY order text byte-wise (the order of
//     Unicode code points, upper-case ASCII before lower-case): on SQLite with COLLATE
//     BINARY, on PostgreSQL with COLLATE "C". Numbers, times and booleans compare by value.
//   - ORDER BY puts NULL after every value (ASC NULLS LAST, DESC NULLS FIRST, PostgreSQL's
//     default); sqlgen writes the NULLS clause on both engines.
//   - BEGINS, CONTAINS and LIKE are case-sensitive and apply to String columns only (any
//     other column is a *StatementError). LIKE's "*" matches any run of characters; every
//     other character of the value, "%", "_", "?", "[" and "\" included, matches itself.
//     BEGINS 'x' is LIKE 'x*' and CONTAINS 'x' is LIKE '*x*' with "*" taken literally.
//   - A comparison with NULL is never true, as in SQL; IS [NOT] NULL tests for it.
//
// How each engine is made to follow them, for a String column "c":
//
//	                  SQLite                               PostgreSQL
//	=, <>, IN         "c" COLLATE BINARY = ?               "c" = $1
//	<, <=, >, >=      "c" COLLATE BINARY < ?               "c" COLLATE "C" < $1
//	BETWEEN           ("c" COLLATE BINARY BETWEEN ? AND ?) ("c" COLLATE "C" BETWEEN $1 AND $2)
//	BEGINS, CONTAINS  "c" GLOB ?                           "c" COLLATE "C" LIKE $1 ESCAPE '\'
//	and LIKE          (the value GLOB-escaped)             (the value LIKE-escaped)
//	ORDER BY          "c" COLLATE BINARY ASC NULLS LAST    "c" COLLATE "C" ASC NULLS LAST
//
// SQLite: COLLATE BINARY is already SQLite's default, but a column declared with COLLATE
// NOCASE would otherwise compare without case, so sqlgen writes it. SQLite's LIKE ignores
// ASCII case unless a connection pragma (case_sensitive_like, deprecated) says otherwise, so
// sqlgen does not use LIKE on SQLite: it uses GLOB, which is always case-sensitive and
// depends on no pragma. GLOB has no ESCAPE clause; its metacharacters are escaped with
// one-character classes instead: "*" as "[*]", "?" as "[?]", "[" as "[[]" ("]" and every
// other character already match themselves). IQL's "*" stays GLOB's "*".
//
// PostgreSQL: LIKE is case-sensitive. The user's "%" and "_" and the escape character "\"
// are escaped with "\" in the bound value, and the SQL says ESCAPE '\' explicitly (so the
// rule does not hang on the server's default escape; it needs standard_conforming_strings,
// on by default since PostgreSQL 9.1 and required by pgx). IQL's "*" becomes "%". "=", "<>"
// and IN carry no COLLATE: under a deterministic collation (every collation but ICU ones
// declared nondeterministic) PostgreSQL's text equality is already byte-wise, and an
// explicit collation would stop the planner from using the column's ordinary index.
// Columns with a nondeterministic collation are not supported. A String column of a type
// that is not text (Column.Text) reads as its text where it is compared, "c"::text
// (abbrev("c") for inet), with COLLATE "C" where the text is ordered or matched, except
// a uuid, which compares and orders as itself (it orders as its text would; "=" reads
// the value as a uuid, so another spelling of the same uuid finds it) and reads as its
// text only in a pattern. A uuid owner column takes only an owner spelled as PostgreSQL
// prints a uuid.
//
// # Owner and row limit
//
// Options.Owner confines a statement to one owner's rows: SELECT, UPDATE and DELETE get
// WHERE "owner" = ? AND (<the statement's condition>), the condition always in parentheses
// so that its OR cannot escape; INSERT gets the owner column added with the owner's value in
// every row. A statement that writes the owner column itself (an INSERT that names it, an
// UPDATE that sets it) is a *StatementError: no one can write a row for someone else or
// give one away. Options.MaxRows makes a SELECT's LIMIT the smaller of its own LIMIT and
// MaxRows+1, so a caller that reads MaxRows+1 rows knows that the result would be larger
// than it may return and can refuse it rather than truncate it silently.
//
// # Venue
//
// Options.Venue confines a SELECT, UPDATE or DELETE to the rows of the venues a caller
// holds, on a market-data table: its WHERE gets "venue" IN (?, ...), each venue a bind
// argument compared as "=" compares (exactly: "asx", "ASX " and a look-alike are not
// "ASX"), after the owner predicate if any and before the statement's condition, which is
// in parentheses as with the owner, so that its OR cannot escape. With Venue.Null the
// filter is ("venue" IN (?, ...) OR "venue" IS NULL); with no venue held, "venue" IS NULL,
// or 0 = 1 when NULL is not visible either. An INSERT gets no filter: which venues a
// caller may write is the policy's check, before Generate. The venue column must be a
// String column compared by its text (TextType or TextCast). FilterVenue writes the same
// filter in IQL, for a target that takes IQL (a Forwarder's upstream).
package sqlgen
