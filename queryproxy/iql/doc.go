// Package iql reads IQL, the query service's small statement language, into one AST, and
// prints an AST back as canonical IQL.
//
// It owns the language: the lexer, the parser, the AST that the text endpoint (POST /query)
// and the structured endpoints (/query/{table}/select and /insert) share, the canonical
// printer that the legacy engine sends upstream, and the bounds that keep a hostile statement
// cheap. It does not know tables, columns, scopes or SQL: names stay as written until the
// policy resolves them against an engine's catalog, and package sqlgen turns an AST into SQL.
// It must not depend on anything but the standard library: no I/O, no database, no Caddy,
// no other Gatehouse package.
//
// # Grammar
//
// Keywords are case-insensitive and contextual: a word is a keyword only where the grammar
// expects one, so tables and columns may be called Order, Select, Limit or Like.
//
//	statement  = ( select | insert | update | delete ) [ ";" ] .
//	select     = SELECT ( "*" | column { "," column } ) FROM table
//	             [ WHERE expr ] [ ORDER BY order { "," order } ] [ LIMIT integer ] .
//	order      = column [ ASC | DESC ] .
//	insert     = INSERT INTO table "(" column { "," column } ")"
//	             VALUES row { "," row } .
//	row        = "(" value { "," value } ")" .
//	update     = UPDATE table SET column "=" value { "," column "=" value } WHERE expr .
//	delete     = DELETE FROM table WHERE expr .
//	expr       = and { OR and } .
//	and        = not { AND not } .
//	not        = NOT not | "(" expr ")" | predicate .
//	predicate  = column ( ( "=" | "<>" | "!=" | "<" | "<=" | ">" | ">=" ) scalar
//	                    | IS [ NOT ] NULL
//	                    | [ NOT ] ( BEGINS | CONTAINS | LIKE ) string
//	                    | [ NOT ] IN ( "[" list "]" | "(" list ")" )
//	                    | [ NOT ] BETWEEN scalar AND scalar ) .
//	list       = scalar { "," scalar } .
//	value      = scalar | NULL .
//	scalar     = string | number | TRUE | FALSE .
//
// Precedence is NOT, then AND, then OR. "x NOT LIKE 'a*'" (and NOT IN, NOT BETWEEN, NOT
// BEGINS, NOT CONTAINS) is the same AST as "NOT x LIKE 'a*'"; "!=" is the same as "<>".
// UPDATE and DELETE must have a WHERE clause. The optional ";" may only be followed by
// white space: one request carries one statement.
//
// # Lexical rules
//
//   - White space is space, tab, CR and LF. There are no comments: "--" and "/*" are errors.
//   - An identifier is an ASCII letter or "_" followed by ASCII letters, digits and "_".
//     Identifiers are bare: there is no quoted form, because "..." is a string literal
//     upstream. A non-ASCII letter in a name is an error, so a look-alike name never reaches
//     the catalog.
//   - A string is written in single or double quotes; the quote character is written twice
//     to put it inside (see below). Strings may hold any UTF-8 except NUL; there are no
//     backslash escapes.
//   - A number is an optional "-", digits, and optionally "." and digits: 42, -7, 37.480.
//     Its text is kept exactly as written (no float conversion): 37.480 stays "37.480".
//   - LIKE's pattern uses "*" for any run of characters (possibly empty); every other
//     character, "%", "_", "?" and "[" included, stands for itself. There is no escape for
//     a literal "*".
//
// The first two are the string it's; the third is say "hi":
//
//	'it''s'   "it's"   "say ""hi"""
//
// One known limit of contextual keywords: at the start of a predicate the word NOT is the
// operator unless a comparison symbol (=, <>, !=, <, <=, >, >=) follows it, so a column
// named Not can be compared with those symbols but not with IS, IN, LIKE and the others.
//
// # Canonical form
//
// Format prints keywords upper-case, names as written, strings in single quotes with an
// inner single quote doubled, numbers as their exact text, IN lists in square brackets, and
// parentheses only where the tree needs them. For every statement Parse returns,
// Parse(Format(stmt)) equals stmt (FuzzParse checks it).
//
// # Bounds
//
// Parse and the structured constructors enforce a Limits value: statement size, nesting
// depth, IN-list length, predicates, insert rows, list lengths, identifier and literal
// length, and the total number of values. Zero fields take the Default* constants.
package iql
