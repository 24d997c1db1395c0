// Package cli holds the gatehouse subcommands that Caddy's command line
// runs next to its own: `gatehouse user add|passwd|disable|enable|delete|scopes|entitle|unentitle|show|list|mfa|hash`,
// `gatehouse client secret`, `gatehouse keys list|rotate` and `gatehouse
// audit keys|verify`. Importing it
// registers them with caddycmd.
//
// The commands that use the store open the one a configuration names,
// through the caddymodule root package's exported App (OpenStore,
// KeyPolicy, IdentityConfig); they call the identity package's exported
// functions for what the identity server does (password hashes, key
// rotation), and never reach into the app's runtime state.
package cli
