// Package pgtest gives tests a database of their own on the throwaway
// PostgreSQL server that the project's test command starts (test.sh,
// scripts/test-postgres.sh), whose URL is in GATEHOUSE_TEST_POSTGRES. A
// test without it skips, saying why; in CI it is always set.
//
// It is imported only by tests; it must not depend on Caddy or on any
// gatehouse package.
package pgtest
