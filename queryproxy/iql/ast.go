package iql

// Statement is one parsed statement: *Select, *Insert, *Update or *Delete.
type Statement interface {
	// TableName is the table the statement reads or writes, as written.
	TableName() string
	isStatement()
}

// Select reads rows: SELECT Columns FROM Table WHERE Where ORDER BY OrderBy LIMIT Limit.
type Select struct {
	Table string
	// Columns are the select list as written; nil means every column ("*").
	Columns []string
	// Where is nil when the statement has no WHERE clause.
	Where   Expr
	OrderBy []OrderTerm
	// Limit is nil when the statement has no LIMIT clause; LIMIT 0 is allowed.
	Limit *int64
}

// OrderTerm is one ORDER BY term.
type OrderTerm struct {
	Column string
	Desc   bool
}

// Insert adds rows: INSERT INTO Table (Columns) VALUES Rows. Every row has one value per
// column, in the same order.
type Insert struct {
	Table   string
	Columns []string
	Rows    [][]Literal
}

// Update changes rows: UPDATE Table SET Set WHERE Where. Where is never nil in a valid
// statement.
type Update struct {
	Table string
	Set   []Assignment
	Where Expr
}

// Assignment is one "column = value" of an UPDATE's SET clause.
type Assignment struct {
	Column string
	Value  Literal
}

// Delete removes rows: DELETE FROM Table WHERE Where. Where is never nil in a valid
// statement.
type Delete struct {
	Table string
	Where Expr
}

func (s *Select) TableName() string { return s.Table }
func (s *Insert) TableName() string { return s.Table }
func (s *Update) TableName() string { return s.Table }
func (s *Delete) TableName() string { return s.Table }

func (*Select) isStatement() {}
func (*Insert) isStatement() {}
func (*Update) isStatement() {}
func (*Delete) isStatement() {}

// Expr is a condition: *And, *Or, *Not or *Compare.
type Expr interface{ isExpr() }

// And is true when every term is. It has at least two terms. The parser flattens
// "a AND b AND c" into one And; a parenthesized And inside an And stays a separate node.
type And struct{ Terms []Expr }

// Or is true when any term is. It has at least two terms, flattened as And's are.
type Or struct{ Terms []Expr }

// Not negates X.
type Not struct{ X Expr }

// Compare is one predicate: Column Op Values. How many values it holds depends on Op (see
// Op.Arity): none for IS [NOT] NULL, two for BETWEEN, one or more for IN, one otherwise.
// Values are never NULL literals.
type Compare struct {
	Column string
	Op     Op
	Values []Literal
}

func (*And) isExpr()     {}
func (*Or) isExpr()      {}
func (*Not) isExpr()     {}
func (*Compare) isExpr() {}
