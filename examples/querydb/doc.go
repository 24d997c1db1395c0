// Package querydb holds the demo's query database: the SQL script (demo.sql) from which
// the query service creates its embedded SQLite database on first start.
//
// # DEMO-ONLY
//
// The data is made up and public: the securities, news, accounts and orders of the demo
// users of examples/users.json. Never use it for anything but the demo and the tests.
//
// The script follows docs/protocol.md ("Query service (IQ)"): Market and Security
// (Service/Market), News and NewsSources (Service/News), Account and "Order"
// (Service/Trading; rows per user, Owner holding the user's subject id). It is SQLite SQL,
// run by sqliteengine as Config.Init. demo_postgres.sql (PostgresSQL) holds the same
// tables and rows for PostgreSQL (pgengine), which its tests load. This package has no
// code to depend on.
package querydb
