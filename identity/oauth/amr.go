package oauth

import "slices"

// Authentication methods (RFC 8176), as the amr claim lists them.
const (
	// AMRPassword: the user entered their password.
	AMRPassword = "pwd"
	// AMROneTimePassword: a one-time code (RFC 6238) or a recovery code.
	AMROneTimePassword = "otp"
	// AMRHardwareKey: a proof of possession of a key in an authenticator
	// (a passkey).
	AMRHardwareKey = "hwk"
	// AMRUserVerified: the authenticator verified the user (a PIN or a
	// biometric), which with a key it holds makes two factors.
	AMRUserVerified = "user"
	// AMRMultipleFactors: more than one factor was passed.
	AMRMultipleFactors = "mfa"
)

// Authentication context classes (the acr claim, OpenID Connect Core
// §2, and the acr_values of RFC 9470): the REFEDS profiles, which name
// what most relying parties ask for.
const (
	// ACRSingleFactor: one factor (a password).
	ACRSingleFactor = "https://refeds.org/profile/sfa"
	// ACRMultiFactor: two factors or more.
	ACRMultiFactor = "https://refeds.org/profile/mfa"
)

// ACRValuesSupported are the classes discovery lists.
var ACRValuesSupported = []string{ACRSingleFactor, ACRMultiFactor}

// MultiFactor reports whether authentication methods amr include a
// second factor.
func MultiFactor(amr []string) bool { return slices.Contains(amr, AMRMultipleFactors) }

// ACR is the class of an authentication that passed amr: none for no
// authentication of a user (client credentials).
func ACR(amr []string) string {
	switch {
	case len(amr) == 0:
		return ""
	case MultiFactor(amr):
		return ACRMultiFactor
	}
	return ACRSingleFactor
}

// WithFactor is amr after one more factor, method, was passed on top of
// it: method added, and "mfa" once there are two.
func WithFactor(amr []string, method string) []string {
	out := slices.Clone(amr)
	if !slices.Contains(out, method) {
		out = append(out, method)
	}
	if len(out) > 1 && !MultiFactor(out) {
		out = append(out, AMRMultipleFactors)
	}
	return out
}

// SecondFactorScopes are the scopes of scopes that need a second factor
// (need), in scopes' order.
func SecondFactorScopes(scopes, need []string) []string {
	var out []string
	for _, s := range scopes {
		if slices.Contains(need, s) {
			out = append(out, s)
		}
	}
	return out
}

// WithoutSecondFactorScopes is scopes without those that need a second
// factor (need), in scopes' order.
func WithoutSecondFactorScopes(scopes, need []string) []string {
	out := make([]string, 0, len(scopes))
	for _, s := range scopes {
		if !slices.Contains(need, s) {
			out = append(out, s)
		}
	}
	return out
}
