package oauth

import (
	"net/http"
	"strconv"
)

// CORSMaxAge is how long a browser may cache a preflight answer, in seconds.
const CORSMaxAge = 600

// Preflight answers a CORS preflight (OPTIONS) for an endpoint taking
// methods. allowed says whether some client allows an origin: a preflight
// carries no client id, so it is answered for the union. An origin no
// client allows gets no CORS headers, so the browser refuses the request.
func Preflight(w http.ResponseWriter, r *http.Request, methods string, allowed func(origin string) bool) {
	h := w.Header()
	h.Set("Allow", methods+", OPTIONS")
	h.Add("Vary", "Origin")
	h.Add("Vary", "Access-Control-Request-Method")
	h.Add("Vary", "Access-Control-Request-Headers")
	origin := r.Header.Get("Origin")
	if origin != "" && allowed(origin) {
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Methods", methods)
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept")
		h.Set("Access-Control-Max-Age", strconv.Itoa(CORSMaxAge))
	}
	w.WriteHeader(http.StatusNoContent)
}

// AllowOrigin lets origin read the response.
func AllowOrigin(h http.Header, origin string) {
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
}
