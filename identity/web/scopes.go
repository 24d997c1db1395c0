package web

import "strings"

// DescribeScope says what a scope lets a client do, for the pages that ask
// the user (consent, device verification).
func DescribeScope(scope string) Scope {
	switch scope {
	case "openid":
		return Scope{Name: "Sign you in", Description: "Know who you are (your account's identifier)."}
	case "profile":
		return Scope{Name: "Your profile", Description: "Your name and username."}
	case "email":
		return Scope{Name: "Your e-mail address", Description: "Your e-mail address and whether it is verified."}
	case "roles":
		return Scope{Name: "Your roles"}
	case "offline_access":
		return Scope{Name: "Stay signed in", Description: "Keep access while you are away, until you revoke it."}
	}
	if area, ok := strings.CutPrefix(scope, "Service/"); ok {
		return Scope{Name: area, Description: "Use the " + area + " service for you (" + scope + ")."}
	}
	return Scope{Name: scope}
}
