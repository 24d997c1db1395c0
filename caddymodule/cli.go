package caddymodule

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gatehouse/gatehouse/identity/store"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "user",
		Usage: "add|passwd|disable|enable|list|hash ...",
		Short: "Manages the users of the gatehouse store",
		Long: `
Adds, changes, disables, enables and lists the users of the gatehouse store,
and hashes passwords for users files.

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
}

// openCLIStore opens the store that cmd's flags name (see the user
// command's help). The caller closes it.
func openCLIStore(cmd *cobra.Command) (store.Store, error) {
	app, err := loadCLIApp(cmd)
	if err != nil {
		return nil, err
	}
	return openAppStore(cmd, app)
}

// loadCLIApp returns the gatehouse app that cmd's --config (with
// --adapter) names, or an app with just the SQLite store --db, or by
// default an empty app (the default store).
func loadCLIApp(cmd *cobra.Command) (*App, error) {
	configFile, _ := cmd.Flags().GetString("config")
	adapter, _ := cmd.Flags().GetString("adapter")
	db, _ := cmd.Flags().GetString("db")
	if db != "" && configFile != "" {
		return nil, errors.New("--db and --config exclude each other")
	}
	if adapter != "" && configFile == "" {
		return nil, errors.New("--adapter needs --config")
	}
	app := new(App)
	switch {
	case db != "":
		raw, err := json.Marshal(map[string]string{"backend": "sqlite", "path": db})
		if err != nil {
			return nil, err
		}
		app.StoreRaw = raw
	case configFile != "":
		cfgJSON, _, _, err := caddycmd.LoadConfig(configFile, adapter)
		if err != nil {
			return nil, err
		}
		var cfg struct {
			Apps struct {
				Gatehouse *App `json:"gatehouse"`
			} `json:"apps"`
		}
		if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
			return nil, fmt.Errorf("decoding config %q: %w", configFile, err)
		}
		if cfg.Apps.Gatehouse == nil {
			return nil, fmt.Errorf("config %q has no gatehouse app", configFile)
		}
		app = cfg.Apps.Gatehouse
	}
	return app, nil
}

// openAppStore opens the store of app (not through the pool: the CLI
// holds it alone). The caller closes it.
func openAppStore(cmd *cobra.Command, app *App) (store.Store, error) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: cmd.Context()})
	defer cancel()
	opener, err := app.loadStoreModule(ctx)
	if err != nil {
		return nil, err
	}
	st, err := opener.OpenStore(cmd.Context())
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", opener.StoreKey(), err)
	}
	return st, nil
}

// addStoreFlags adds the flags that name the store (see openCLIStore).
func addStoreFlags(cmd *cobra.Command) {
	fl := cmd.PersistentFlags()
	fl.StringP("config", "c", "", "Configuration file whose gatehouse app names the store")
	fl.StringP("adapter", "a", "", "Name of the config adapter of --config")
	fl.String("db", "", "Path of the SQLite store (instead of --config)")
}

// maxPasswordInput bounds what readPassword reads.
const maxPasswordInput = 4096

// readPassword reads a password: prompted for without echo (twice when
// confirm is set) when in is a terminal, else the first line of in.
func readPassword(in io.Reader, prompt io.Writer, confirm bool) (string, error) {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		pw, err := promptPassword(f, prompt, "Password: ")
		if err != nil {
			return "", err
		}
		if confirm {
			again, err := promptPassword(f, prompt, "Repeat password: ")
			if err != nil {
				return "", err
			}
			if again != pw {
				return "", errors.New("the passwords differ")
			}
		}
		return pw, nil
	}
	line, err := bufio.NewReader(io.LimitReader(in, maxPasswordInput)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("reading password: %w", err)
	}
	if err != nil && len(line) == maxPasswordInput {
		return "", fmt.Errorf("reading password: longer than %d bytes", maxPasswordInput)
	}
	pw := strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if pw == "" {
		return "", errors.New("empty password on standard input")
	}
	return pw, nil
}

// promptPassword reads one password from the terminal f without echo.
func promptPassword(f *os.File, prompt io.Writer, text string) (string, error) {
	fmt.Fprint(prompt, text)
	b, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(prompt)
	if err != nil {
		return "", fmt.Errorf("reading password: %w", err)
	}
	if len(b) == 0 {
		return "", errors.New("empty password")
	}
	return string(b), nil
}
