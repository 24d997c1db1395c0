package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/gatehouse/gatehouse/identity/oauth"
)

// tokenResponse is the part of a token response the benchmark reads.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	RefreshToken string `json:"refresh_token"`
	IDToken      string `json:"id_token"`
}

// parseToken decodes a token response and checks it holds a Bearer token.
func parseToken(body []byte) (tokenResponse, error) {
	var tr tokenResponse
	if err := json.Unmarshal(body, &tr); err != nil {
		return tr, fmt.Errorf("decoding token response: %w", err)
	}
	if tr.AccessToken == "" || tr.TokenType != "Bearer" {
		return tr, errors.New("token response without a Bearer access_token")
	}
	return tr, nil
}

// clientCredentialsForm is the body of both the client_credentials request
// and the baseline's identical POST.
var clientCredentialsForm = url.Values{
	"grant_type": {oauth.GrantClientCredentials},
	"scope":      {marketScope},
}.Encode()

// clientCredentials posts the client_credentials grant with
// client_secret_basic as the client id (whose access tokens have its
// algorithm); one warm-up request per worker checks the answer.
func clientCredentials(t *target, s *server, id string) setupFunc {
	auth := basicAuth(id, s.serviceSecret)
	return func(ctx context.Context, _ int) (op, error) {
		body, err := t.post(ctx, tokenPath, clientCredentialsForm, auth)
		if err != nil {
			return nil, err
		}
		if tr, err := parseToken(body); err != nil {
			return nil, err
		} else if tr.RefreshToken != "" || tr.IDToken != "" {
			return nil, errors.New("client_credentials answered more than an access token")
		}
		return func(ctx context.Context) error {
			_, err := t.post(ctx, tokenPath, clientCredentialsForm, auth)
			return err
		}, nil
	}
}

// baseline posts the client_credentials request to the static route.
func baseline(t *target, s *server) setupFunc {
	auth := basicAuth(serviceID, s.serviceSecret)
	return func(ctx context.Context, _ int) (op, error) {
		o := func(ctx context.Context) error {
			_, err := t.post(ctx, baselinePath, clientCredentialsForm, auth)
			return err
		}
		return o, o(ctx)
	}
}

// refresh logs each worker in once with the password grant (scope
// offline_access Service/Market: no openid, so no ID token and one
// signature per request), then rotates the worker's own refresh chain: each
// answer's refresh_token is the next request's. A failure breaks the chain
// and stops the worker.
func refresh(t *target, s *server) setupFunc {
	login := url.Values{
		"grant_type": {oauth.GrantPassword},
		"client_id":  {appID},
		"username":   {username},
		"password":   {s.password},
		"scope":      {userScopes},
	}.Encode()
	return func(ctx context.Context, _ int) (op, error) {
		body, err := t.post(ctx, tokenPath, login, "")
		if err != nil {
			return nil, fmt.Errorf("password login: %w", err)
		}
		tr, err := parseToken(body)
		if err != nil {
			return nil, fmt.Errorf("password login: %w", err)
		}
		if tr.RefreshToken == "" || tr.IDToken != "" {
			return nil, errors.New("password login: want a refresh token and no ID token")
		}
		rt := tr.RefreshToken
		return func(ctx context.Context) error {
			form := url.Values{
				"grant_type":    {oauth.GrantRefreshToken},
				"client_id":     {appID},
				"refresh_token": {rt},
			}.Encode()
			body, err := t.post(ctx, tokenPath, form, "")
			if err != nil {
				return fmt.Errorf("%w: %w", errStop, err)
			}
			tr, err := parseToken(body)
			if err != nil || tr.RefreshToken == "" {
				return fmt.Errorf("%w: refresh answered no refresh token: %v", errStop, err)
			}
			rt = tr.RefreshToken
			return nil
		}, nil
	}
}
