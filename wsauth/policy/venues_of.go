package policy

import (
	"slices"
	"strings"

	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// Of names the venues and the feed of a message for controller and topic
// (with its "!" arguments) whose Data is data, as the table reads them:
// one venue for a symbol or a venue, the list for a venue filter, the
// backend's venues of the feed (VenueConfig.Venues) for an "every" topic
// or an empty filter; feed "" for a topic that carries no market data.
// Venues are nil when the message names none the table can read. It
// checks nothing (Check does): it says what a subscription is of, for
// the audit.
func (v *Venues) Of(controller, topic string, data []byte) (venues []string, feed string) {
	base, arg, hasArg := strings.Cut(topic, "!")
	r := v.lookup(controller, base)
	switch r.In {
	case VenueNone:
		return nil, ""
	case VenueEvery:
		return slices.Clone(v.all[r.Feed]), r.Feed
	case VenueInArgument:
		if venue, ok := ParseVenue(arg, r.Form); hasArg && ok {
			return []string{venue}, r.Feed
		}
		return nil, r.Feed
	}
	raw, found, err := zenith.DataMember(data, r.Member)
	switch {
	case err != nil || !found && r.Form != FormVenues:
		return nil, r.Feed
	case r.Form == FormVenues:
		list, ok := []string(nil), !found
		if found {
			list, ok = parseVenueList(raw)
		}
		if ok && len(list) == 0 {
			return slices.Clone(v.all[r.Feed]), r.Feed
		}
		return list, r.Feed
	}
	s, _ := plainString(raw)
	if venue, ok := ParseVenue(s, r.Form); ok {
		return []string{venue}, r.Feed
	}
	return nil, r.Feed
}
