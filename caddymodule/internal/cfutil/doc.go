// Package cfutil is the one Caddyfile block parser of Gatehouse's
// directives and global option: ParseBlock walks a block's subdirectives,
// refusing one given twice (OnceSet) and leaving the rest to a switch whose
// default is Unrecognized; the argument readers (OneArg, ListArgs,
// DurationArg, ...) read one line each and fail with the dispenser's
// position. Env reads an environment variable a *_env field names,
// without ever quoting it in an error.
//
// It knows Caddy's Caddyfile dispenser and nothing of Gatehouse's
// configuration types.
package cfutil
