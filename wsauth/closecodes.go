package wsauth

import "github.com/gorilla/websocket"

// clientCloseCode is the close code the client gets when the backend leg
// ended with backend: the code the backend sent in its close frame,
// CloseNoStatusReceived for a close frame without one, or
// CloseAbnormalClosure when the leg ended without a close frame. It is the
// one table of what a backend's close means to a client (docs/configuration/gatehouse_ws.md
// lists it):
//
//	1000 normal, 1005 (no code)   1000 the backend ended the session
//	1001 going away               1001 reconnect, the backend is going away
//	1003 unsupported data         1003 the client sent what the backend cannot take
//	1007 invalid payload data     1007 likewise, a message's data
//	1008 policy violation         1008 the backend refused the client
//	1009 message too big          1009 the client's message was too large for it
//	1012 service restart          1012 reconnect, the backend restarts
//	1013 try again later          1013 reconnect later
//	3000–4999 (applications')     as sent
//	1002 protocol error           1011 the gateway and the backend disagreed on the
//	                                   protocol: the client made no error, so it is not
//	                                   told it did
//	1010 mandatory extension      1011 a code only clients send: the backend is broken
//	1014 bad gateway              1011 the backend's own upstream failed (1014 is
//	                                   accepted from the backend, but many clients,
//	                                   gorilla's among them, refuse to receive it)
//	1011 internal error, 1006     1011 the backend failed or the leg was lost
//	anything else                 1011
func clientCloseCode(backend int) int {
	switch backend {
	case websocket.CloseNormalClosure, websocket.CloseNoStatusReceived:
		return websocket.CloseNormalClosure
	case websocket.CloseGoingAway, websocket.CloseUnsupportedData, websocket.CloseInvalidFramePayloadData,
		websocket.ClosePolicyViolation, websocket.CloseMessageTooBig, websocket.CloseServiceRestart,
		websocket.CloseTryAgainLater:
		return backend
	}
	if backend >= 3000 && backend <= 4999 {
		return backend
	}
	return websocket.CloseInternalServerErr
}

// closeBadGateway is RFC 6455's registry's 1014: a gateway's upstream
// answered badly. Gorilla has no name for it.
const closeBadGateway = 1014

// validReceivedCloseCode reports whether a backend may send code in a
// close frame: the codes RFC 6455 §7.4 lets an endpoint send (1014 among
// them, which gorilla's reader refuses), and the applications' 3000–4999.
// Any other is a protocol error.
func validReceivedCloseCode(code int) bool {
	switch code {
	case websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseProtocolError,
		websocket.CloseUnsupportedData, websocket.CloseInvalidFramePayloadData, websocket.ClosePolicyViolation,
		websocket.CloseMessageTooBig, websocket.CloseMandatoryExtension, websocket.CloseInternalServerErr,
		websocket.CloseServiceRestart, websocket.CloseTryAgainLater, closeBadGateway:
		return true
	}
	return code >= 3000 && code <= 4999
}
