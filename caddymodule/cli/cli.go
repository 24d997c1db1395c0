package cli

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "user",
		Usage: "add|passwd|disable|enable|delete|scopes|entitle|unentitle|show|list|hash ...",
		Short: "Manages the users of the gatehouse store",
		Long: `
Adds, changes, disables, enables, deletes, shows and lists the users of the
gatehouse store, gives them market-data entitlements and takes them away
(entitle, unentitle: the user's access tokens issued before are revoked), and
hashes passwords for users files.

The commands that use the store open the same one the server does: the store
of the gatehouse app of --config (with --adapter if its name does not say
what it is), the SQLite database --db, or by default the SQLite database at
the default path in Caddy's data directory. The server may be running: SQLite
lets both write.

Passwords are read from standard input, one line, or prompted for without
echo when standard input is a terminal; never from the command line.
`,
		CobraFunc: setUpUserCommand,
	})
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "client",
		Usage: "secret",
		Short: "Helps configure gatehouse OAuth clients",
		Long: `
Helps configure the OAuth clients of the gatehouse app.
`,
		CobraFunc: setUpClientCommand,
	})
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "keys",
		Usage: "list|rotate [--immediately] [--config <file> [--adapter <name>] | --db <path>]",
		Short: "Lists and rotates the signing keys of the gatehouse store",
		Long: `
Lists the signing keys of the gatehouse store with their schedule, and forces
a rotation.

The store is named as for the user command: the store of the gatehouse app of
--config (with --adapter if its name does not say what it is), the SQLite
database --db, or by default the SQLite database at the default path in
Caddy's data directory.

rotate creates a new key that signs after the announce time of the app's
signing_keys (24h by default), or at once with --immediately; the signing key
retires then and stays published until the tokens it signed have expired.
With --config it uses the app's signing_keys, its key encryption key (from
the environment variable or file the config names) and its token lifetimes;
use the same config as the servers. Running servers pick the change up
within their check_interval (1m by default).
`,
		CobraFunc: setUpKeysCommand,
	})
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "audit",
		Usage: "keys|verify|usage [--from <date> --to <date> [--format csv|json]] [--config <file> [--adapter <name>] | --db <path>] [<file>...]",
		Short: "Exports the audit keys, verifies the audit logs and reports market-data usage from them",
		Long: `
Exports the audit public keys and verifies the tamper-evident audit's logs
(docs/audit.md).

keys prints every audit public key the store ever held, as a JWK Set: keep a
copy where the store's administrators cannot change it.

verify reads the audit files (a rolled chain's oldest first; .gz ones too),
or with --config those the config's logging section writes the logger
gatehouse.audit.chain to, and checks every chain and checkpoint with the
store's audit keys and checkpoints: it names the first record of each run that
was edited, inserted, removed or reordered, a forged checkpoint, a run the
store or the next run names that no file holds, and lists records after a
run's last checkpoint as unprotected and a line a crash cut short as a cut.
It exits 1 on a problem.

usage --from DATE --to DATE reads the same files, verifies them first and
refuses to report when they do not verify, then prints per user, venue and
feed, over the UTC days from --from to --to (both included), the days
entitled, the days used, the peak of concurrent subscriptions,
subscription-minutes, queries and rows read, as CSV with a header row or
(--format json) JSON. It refuses a range whose first day has no entitlement
snapshot on it or before it. docs/audit.md, "The usage report", gives the
rules.

The store is named as for the user command: the store of the gatehouse app of
--config, the SQLite database --db, or by default the SQLite database at the
default path in Caddy's data directory.
`,
		CobraFunc: setUpAuditCommand,
	})
}
