package caddymodule_test

import (
	// The tests of package caddymodule load configurations with the default
	// store, the gatehouse.stores.sqlite module, which this package does not
	// import (the module's package imports this one). Importing it from
	// this external test package registers it in the test binary.
	_ "github.com/gatehouse/gatehouse/caddymodule/sqlitestore"
)
