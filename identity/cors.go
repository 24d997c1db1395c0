package identity

import (
	"net/http"
	"strconv"
)

// corsMaxAge is how long a browser may cache a preflight answer.
const corsMaxAge = 600

// anyClientAllowsOrigin reports whether some client allows origin. A
// preflight carries no client id, so it is answered for the union.
func (s *Server) anyClientAllowsOrigin(origin string) bool {
	for _, c := range s.clients {
		if c.allowsOrigin(origin) {
			return true
		}
	}
	return false
}

// preflight answers a CORS preflight (OPTIONS) for an endpoint taking
// methods. An origin no client allows gets no CORS headers, so the browser
// refuses the actual request.
func (s *Server) preflight(w http.ResponseWriter, r *http.Request, methods string) {
	h := w.Header()
	h.Set("Allow", methods+", OPTIONS")
	h.Add("Vary", "Origin")
	h.Add("Vary", "Access-Control-Request-Method")
	h.Add("Vary", "Access-Control-Request-Headers")
	origin := r.Header.Get("Origin")
	if origin != "" && s.anyClientAllowsOrigin(origin) {
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Methods", methods)
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept")
		h.Set("Access-Control-Max-Age", strconv.Itoa(corsMaxAge))
	}
	w.WriteHeader(http.StatusNoContent)
}

func allowOrigin(h http.Header, origin string) {
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
}
