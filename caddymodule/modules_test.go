package caddymodule_test

import (
	// The tests of package caddymodule load configurations with modules
	// that live in its sub-packages (the store backends, the message
	// gateway, the demo backend of Caddyfile.example), which this package
	// does not import (their packages import this one). Importing them from
	// this external test package registers them in the test binary.
	_ "github.com/gatehouse/gatehouse/caddymodule/consolehandler"
	_ "github.com/gatehouse/gatehouse/caddymodule/demobackend"
	_ "github.com/gatehouse/gatehouse/caddymodule/pgstore"
	_ "github.com/gatehouse/gatehouse/caddymodule/queryhandler"
	_ "github.com/gatehouse/gatehouse/caddymodule/sqlitestore"
	_ "github.com/gatehouse/gatehouse/caddymodule/wshandler"
)
