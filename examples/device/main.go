// Command device is the demo's device: it starts the device authorization
// flow (RFC 8628) with golang.org/x/oauth2, prints the code and the page
// where a user approves it, waits for the approval, and prints the token
// response's scope and lifetime (never the tokens themselves).
//
//	go run ./examples/device [-issuer http://localhost:8080] [-client demo-app] [-scope "openid Service/Market"]
//
// The issuer's default follows GATEHOUSE_HTTP_PORT, as the demo's does.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

func main() {
	port := cmp.Or(os.Getenv("GATEHOUSE_HTTP_PORT"), "8080")
	issuer := flag.String("issuer", "http://localhost:"+port, "the identity server (default: the demo's, on GATEHOUSE_HTTP_PORT)")
	client := flag.String("client", "demo-app", "a client allowed the device_code grant")
	scope := flag.String("scope", "openid profile Service/Market", "the scopes to ask for")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg := &oauth2.Config{
		ClientID: *client,
		Endpoint: oauth2.Endpoint{
			DeviceAuthURL: *issuer + "/connect/deviceauthorization",
			TokenURL:      *issuer + "/connect/token",
			AuthStyle:     oauth2.AuthStyleInParams,
		},
		Scopes: strings.Fields(*scope),
	}
	da, err := cfg.DeviceAuth(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "device authorization:", err)
		os.Exit(1)
	}
	fmt.Printf("To connect this device, open %s\nand enter the code %s\n(or open %s)\n",
		da.VerificationURI, da.UserCode, da.VerificationURIComplete)
	fmt.Printf("Waiting for approval (the code expires at %s)...\n", da.Expiry.Format(time.Kitchen))
	tok, err := cfg.DeviceAccessToken(ctx, da)
	if err != nil {
		fmt.Fprintln(os.Stderr, "no token:", err)
		os.Exit(1)
	}
	fmt.Printf("Approved: a %s token for %q, valid until %s; refresh token: %t\n",
		tok.TokenType, tok.Extra("scope"), tok.Expiry.Format(time.Kitchen), tok.RefreshToken != "")
}
