// Package account is the user's own security page, GET|POST
// /connect/account: sign in, see one's second factors, enrol an
// authenticator app (a QR code, then a first code to prove the app holds
// the secret), remove it, and make a new set of recovery codes. Every
// change asks for the password again, checked under the brute-force
// defence, so that a browser left signed in cannot change the factors.
// The forms refuse posts from another site and carry anti-forgery tokens
// bound to the session; the secret offered for enrolment travels sealed
// (AES-256-GCM, bound to the session and short-lived), never stored until
// its first code is right. Passkeys are added the same way (the password,
// then the browser's WebAuthn ceremony, whose sealed state the page
// carries), listed, renamed and removed.
//
// Its row in the import table: factors, session, users, web, store and
// oauth; no other endpoint package.
package account
