// Package mfa is the arithmetic of the second factors that need no
// browser API: time-based one-time passwords (RFC 6238 over RFC 4226's
// HOTP) and recovery codes. It decides whether a code is right and which
// time step it proves; keeping the step a factor last accepted, and
// spending a recovery code, are the store's, which does each atomically
// so that two instances cannot both accept one code.
//
// Its row in the import table: it imports nothing from identity.
package mfa
