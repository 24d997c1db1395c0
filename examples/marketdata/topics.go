package marketdata

import (
	"slices"
	"strings"

	"go.uber.org/zap"
)

// controllers are the controllers of the protocol. A message to another
// gets Error "Controller"; to one of these with a topic this server does
// not serve, Error "Operation.Unknown".
var controllers = []string{"Zenith", "Auth", "Market", "News", "Trading", "Watchlist", "Notify", "Channel", "Fragments"}

// handle answers one text message. It runs on the reader goroutine.
func (c *conn) handle(msg []byte) {
	req, err := parseRequest(msg)
	if err != nil {
		if ce := c.logger.Check(zap.DebugLevel, "malformed message"); ce != nil {
			ce.Write(zap.String("user", c.user), zap.Error(err))
		}
		c.enqueue(errorReply(req, errDeserialise))
		return
	}
	switch req.Action {
	case actionPublish, actionSub, actionUnsub:
	case actionCancel:
		// Every operation here is answered at once: nothing is pending,
		// so there is nothing to cancel and nothing to answer.
		return
	default:
		c.enqueue(errorReply(req, errUnknown))
		return
	}
	if !slices.Contains(controllers, req.Controller) {
		c.enqueue(errorReply(req, errController))
		return
	}
	switch req.Controller + "/" + req.Topic {
	case "Zenith/ServerInfo":
		c.static(req, true, c.serverInfo())
	case "Zenith/Feeds":
		c.static(req, false, feeds())
	case "Market/Markets":
		c.static(req, false, c.markets())
	case "Market/QueryMarkets":
		c.query(req, c.markets())
	case "Trading/QueryAccounts":
		if c.user == "" {
			c.enqueue(errorReply(req, errAuthority))
			return
		}
		c.query(req, c.accounts())
	default:
		if req.Controller == "Market" && (strings.HasPrefix(req.Topic, kindSecurity+"!") || strings.HasPrefix(req.Topic, kindDepth+"!")) {
			c.marketTopic(req)
			return
		}
		c.enqueue(errorReply(req, errUnknown))
	}
}

// query answers a Publish with data, with the request's TransactionID.
func (c *conn) query(req request, data any) {
	if req.Action != actionPublish {
		c.enqueue(errorReply(req, errUnknown))
		return
	}
	c.enqueue(encode(reply{Controller: req.Controller, Topic: req.Topic, Action: actionPublish,
		TransactionID: req.TransactionID, Data: data}))
}

// static answers a subscription to data that does not change while the
// connection lives: Sub gets the confirmation then the data, Unsub its
// confirmation when asked. A Publish gets the data too when publish is
// set.
func (c *conn) static(req request, publish bool, data any) {
	switch req.Action {
	case actionSub:
		if c.enqueue(subConfirm(req)) {
			c.enqueue(encode(reply{Controller: req.Controller, Topic: req.Topic, Action: actionSub, Data: data}))
		}
	case actionUnsub:
		if req.Confirm {
			c.enqueue(unsubConfirm(req))
		}
	default:
		if publish {
			c.query(req, data)
		} else {
			c.enqueue(errorReply(req, errUnknown))
		}
	}
}

// marketTopic serves Market/Security!<code>.<venue> and
// Market/Depth!<code>.<venue>: Sub and Unsub only. The argument must name
// a listed symbol exactly, in the case the market spells it; anything
// else (an unknown symbol or venue, a symbol of one venue with another's
// code, an empty or extra segment) gets Error "Operation.NoResult".
func (c *conn) marketTopic(req request) {
	t, ok := c.s.market.byTopic[req.Topic]
	switch {
	case req.Action == actionPublish:
		c.enqueue(errorReply(req, errUnknown))
	case !ok && req.Action == actionUnsub:
		// Unsubscribing always succeeds.
		if req.Confirm {
			c.enqueue(unsubConfirm(req))
		}
	case !ok:
		c.enqueue(errorReply(req, errNoResult))
	case req.Action == actionSub:
		c.s.market.subscribe(c, req, t)
	default:
		c.s.market.unsubscribe(c, req, t)
	}
}

// subConfirm confirms a subscription: Action Sub, Confirm true, the
// request's TransactionID when it had one. Data follows in further Sub
// messages without a TransactionID, as the original server does.
func subConfirm(req request) []byte {
	return encode(reply{Controller: req.Controller, Topic: req.Topic, Action: actionSub,
		TransactionID: req.TransactionID, Confirm: true})
}

// unsubConfirm confirms an Unsub that asked for it (Confirm true). The
// original client sends Unsub without Confirm and treats an unrequested
// Unsub confirmation of a topic it has subscribed again as a protocol
// error, so none is sent unasked.
func unsubConfirm(req request) []byte {
	return encode(reply{Controller: req.Controller, Topic: req.Topic, Action: actionUnsub,
		TransactionID: req.TransactionID, Confirm: true})
}
