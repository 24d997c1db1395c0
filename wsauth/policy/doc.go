// Package policy says who may send what on the message-service gateway
// (package wsauth):
//
//	policy.go  Policy, the Controller/Topic -> scope table: Rule, Config,
//	           DefaultRules, Allowed
//	limits.go  a session's entitlement limits (Limits, LimitOverride), the
//	           limits that apply to it (LimitsFor) and their validation;
//	           the gateway enforces them
//	venues.go  the entitlement check: where each Controller/Topic's venue
//	           is (VenueRule, VenueConfig), the grammar of a symbol
//	           argument (ParseVenue), Venues.Check; venues_default.go the
//	           default table
//
// It is pure: it reads no socket and keeps no state. A Policy is immutable
// once built and safe for concurrent use; a Config is a value not to be
// changed while New reads it.
//
// It imports the standard library, package zenith (a topic's base, a Data
// member read strictly) and package entitle (the entitlements'
// vocabulary), nothing else (a test in wsauth, deps_test.go, fails if it does).
package policy
