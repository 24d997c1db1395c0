package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/gatehouse/gatehouse/caddymodule"
	"github.com/gatehouse/gatehouse/identity/store"
)

// openStore opens the store that cmd's flags name (see the user command's
// help). The caller closes it.
func openStore(cmd *cobra.Command) (store.Store, error) {
	app, err := loadApp(cmd)
	if err != nil {
		return nil, err
	}
	return app.OpenStore(cmd.Context())
}

// loadApp returns the gatehouse app that cmd's --config (with
// --adapter) names, or an app with just the SQLite store --db, or by
// default an empty app (the default store).
func loadApp(cmd *cobra.Command) (*caddymodule.App, error) {
	configFile, _ := cmd.Flags().GetString("config")
	adapter, _ := cmd.Flags().GetString("adapter")
	db, _ := cmd.Flags().GetString("db")
	if db != "" && configFile != "" {
		return nil, errors.New("--db and --config exclude each other")
	}
	if adapter != "" && configFile == "" {
		return nil, errors.New("--adapter needs --config")
	}
	app := new(caddymodule.App)
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
				Gatehouse *caddymodule.App `json:"gatehouse"`
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

// addStoreFlags adds the flags that name the store (see openStore).
func addStoreFlags(cmd *cobra.Command) {
	fl := cmd.PersistentFlags()
	fl.StringP("config", "c", "", "Configuration file whose gatehouse app names the store")
	fl.StringP("adapter", "a", "", "Name of the config adapter of --config")
	fl.String("db", "", "Path of the SQLite store (instead of --config)")
}
