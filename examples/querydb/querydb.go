package querydb

import _ "embed"

// SQL is the script that creates and fills the demo's query database (demo.sql):
// several statements, for one transaction.
//
//go:embed demo.sql
var SQL string

// PostgresSQL is the same database for PostgreSQL (demo_postgres.sql): the same tables
// and rows, with PostgreSQL's types (numeric keeps its digits: '152.3000' stays 152.3000)
// and every identifier quoted. Several statements, for one transaction, in an empty
// database or schema.
//
//go:embed demo_postgres.sql
var PostgresSQL string

// Subjects of the demo users, the Owner of their accounts and orders.
const (
	DemoSubject   = "5d1c6f2e-8a4b-4c1e-9f3a-2b7d8e6c4a10" // "demo"
	TraderSubject = "a3e8b7d4-2c6f-4e91-b5d0-7f1a9c3e6b28" // "trader"
	// DeskSubject is the client demo-trading-desk: a client_credentials
	// token's sub is its client's ID.
	DeskSubject = "demo-trading-desk"
)
