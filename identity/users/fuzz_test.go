package users

import "testing"

// FuzzVerifyPasswordHash: no stored hash, however malformed or hostile,
// makes VerifyPassword panic or accept a password that is not its
// preimage. The fuzzer cannot find an argon2id or bcrypt preimage of
// wrongPassword, so any acceptance is a bug.
func FuzzVerifyPasswordHash(f *testing.F) {
	const wrongPassword = "definitely-not-it"
	h, _ := HashPassword("pw")
	for _, s := range []string{h, "$argon2id$v=19$m=1,t=1,p=1$AAAA$AAAAAAAAAAAAAAAAAAAAAA", "$2a$04$abc", "$argon2id$"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, hash string) {
		if ok, _ := VerifyPassword(hash, wrongPassword); ok {
			t.Fatalf("hash %q accepted a password that is not its preimage", hash)
		}
	})
}
