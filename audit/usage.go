package audit

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Day is the unit of the usage report: a UTC calendar day.
const Day = 24 * time.Hour

// UsageRow is one user × venue × feed of the usage report, over the UTC
// days of its range.
type UsageRow struct {
	Subject string `json:"subject"` // the record's sub (its client_id when it has no sub)
	// Username is the subject's username as the last record before the
	// range's end that names one says (a snapshot, a change, a refused
	// login); empty for a client, or a subject no record names.
	Username string `json:"username,omitempty"`
	Venue    string `json:"venue"`
	Feed     string `json:"feed"`
	// DaysEntitled counts the days on which the pair was held at any
	// moment (a positive length of time).
	DaysEntitled int `json:"days_entitled"`
	// DaysUsed counts the days on which a subscription of the pair was
	// live at any moment, or a select read rows of the venue for the feed.
	DaysUsed int `json:"days_used"`
	// PeakConcurrent is the most subscriptions of the pair live at once,
	// across every instance and run, within the range.
	PeakConcurrent int `json:"peak_concurrent"`
	// SubscriptionMinutes is the sum of the subscriptions' live time
	// within the range, in minutes.
	SubscriptionMinutes float64 `json:"subscription_minutes"`
	// Queries counts the selects that succeeded (outcome ok) naming the
	// venue and the feed, and RowsRead sums their row counts: a query
	// naming several venues counts its rows under each.
	Queries  int64 `json:"queries"`
	RowsRead int64 `json:"rows_read"`
}

// UsageReport is what Usage computed over the UTC days From to To, both
// included.
type UsageReport struct {
	From time.Time  `json:"from"`
	To   time.Time  `json:"to"`
	Rows []UsageRow `json:"rows"` // by subject, venue, feed; only rows with a figure
	// EndedAtRunEnd counts the subscriptions whose run ended without
	// their end: each ended at its run's last record.
	EndedAtRunEnd int `json:"ended_at_run_end"`
	// UnmatchedEnds counts subscription ends without a live start of
	// theirs in the same run: they are left out.
	UnmatchedEnds int `json:"unmatched_ends"`
}

type usageKey struct{ subject, venue, feed string }

// subKey is what pairs a subscription's end with a start: the same run,
// session, subject, venue and feed.
type subKey struct {
	instance, run, session string
	usageKey
}

type delta struct {
	t time.Time
	n int
}

// Usage computes the usage report over the UTC days of [from, to] from
// records of any number of instances and runs, in any order; pass only
// records of chains that verify. The days are those of from's and to's
// dates; to before from is an error, and so is a range whose first day
// has no entitlement snapshot on it or before it (ErrNoSnapshot): before
// the first snapshot, nothing says what was held. Records outside the
// range still count where they are needed: an entitlement set before it,
// a subscription that started before it.
//
// The rules (docs/audit.md, "The usage report"): an entitlement snapshot
// or change sets its subject's whole set (the entitlements attribute,
// VENUE:feed) from its time on; a subscription is live from its start
// record to the first end record of its run with the same session,
// subject, venue and feed, or, when its run has none, to the run's last
// record; intervals are half-open, so one that ends as another starts is
// not concurrent with it, and records of one instant all apply before
// that instant counts.
func Usage(records []*Record, from, to time.Time) (*UsageReport, error) {
	start := from.UTC().Truncate(Day)
	last := to.UTC().Truncate(Day)
	if last.Before(start) {
		return nil, fmt.Errorf("usage from %s to %s: the range ends before it starts", start.Format(time.DateOnly), last.Format(time.DateOnly))
	}
	end := last.Add(Day)
	days := int(end.Sub(start) / Day)
	recs := slices.Clone(records)
	slices.SortStableFunc(recs, func(a, b *Record) int {
		return cmp.Or(a.Time.Compare(b.Time), strings.Compare(a.Instance, b.Instance),
			strings.Compare(a.Run, b.Run), cmp.Compare(a.Seq, b.Seq))
	})
	if !slices.ContainsFunc(recs, func(r *Record) bool {
		return r.Kind == KindEntitlementSnapshot && r.Time.Before(start.Add(Day))
	}) {
		return nil, fmt.Errorf("usage from %s: %w on that day or before it", start.Format(time.DateOnly), ErrNoSnapshot)
	}

	u := &usage{start: start, end: end, days: days, rows: map[usageKey]*usageDays{}}
	runEnd := map[[2]string]time.Time{}
	for _, r := range recs {
		runEnd[[2]string{r.Instance, r.Run}] = r.Time // sorted: the last is the latest
	}
	held := map[string][]usageKey{}   // each subject's set, as pairs of the subject
	since := map[usageKey]time.Time{} // when each pair held now was taken
	live := map[subKey]int{}          // subscriptions live per run
	deltas := map[usageKey][]delta{}  // subscription starts and ends per pair
	rep := &UsageReport{From: start, To: last}
	usernames := map[string]string{}
	for _, r := range recs {
		subject := recordSubject(r)
		if name := str(r, AttrUsername); name != "" && subject != "" && r.Time.Before(end) {
			usernames[subject] = name
		}
		switch r.Kind {
		case KindEntitlementSnapshot, KindEntitlementChange:
			v, ok := r.Attr(AttrEntitlements)
			list, isList := v.List()
			if !ok || !isList || subject == "" {
				continue
			}
			next := pairsOf(subject, list)
			for _, k := range held[subject] {
				if !slices.Contains(next, k) {
					u.held(k, since[k], r.Time)
					delete(since, k)
				}
			}
			for _, k := range next {
				if _, ok := since[k]; !ok {
					since[k] = r.Time
				}
			}
			held[subject] = next
		case KindSubscriptionStart, KindSubscriptionEnd:
			session, _ := r.Attr(AttrSession)
			s, _ := session.Str()
			for _, k := range recordPairs(r, subject) {
				sk := subKey{r.Instance, r.Run, s, k}
				if r.Kind == KindSubscriptionStart {
					live[sk]++
					deltas[k] = append(deltas[k], delta{r.Time, 1})
				} else if live[sk] > 0 {
					live[sk]--
					deltas[k] = append(deltas[k], delta{r.Time, -1})
				} else {
					rep.UnmatchedEnds++
				}
			}
		case KindQuery:
			u.query(r, subject)
		}
	}
	for k, t := range since {
		u.held(k, t, end)
	}
	for sk, n := range live {
		if n > 0 {
			rep.EndedAtRunEnd += n
			k := sk.usageKey
			deltas[k] = append(deltas[k], delta{runEnd[[2]string{sk.instance, sk.run}], -n})
		}
	}
	for k, ds := range deltas {
		u.subscriptions(k, ds)
	}
	for k, d := range u.rows {
		row := d.row
		row.Subject, row.Venue, row.Feed = k.subject, k.venue, k.feed
		for i := range days {
			if d.entitled[i] {
				row.DaysEntitled++
			}
			if d.used[i] {
				row.DaysUsed++
			}
		}
		row.SubscriptionMinutes = d.live.Minutes()
		if row != (UsageRow{Subject: k.subject, Venue: k.venue, Feed: k.feed}) {
			row.Username = usernames[k.subject]
			rep.Rows = append(rep.Rows, row)
		}
	}
	slices.SortFunc(rep.Rows, func(a, b UsageRow) int {
		return cmp.Or(strings.Compare(a.Subject, b.Subject), strings.Compare(a.Venue, b.Venue), strings.Compare(a.Feed, b.Feed))
	})
	return rep, nil
}

// usage gathers the figures per pair while Usage walks the records.
type usage struct {
	start, end time.Time
	days       int
	rows       map[usageKey]*usageDays
}

type usageDays struct {
	row            UsageRow
	live           time.Duration
	entitled, used []bool
}

func (u *usage) of(k usageKey) *usageDays {
	d := u.rows[k]
	if d == nil {
		d = &usageDays{entitled: make([]bool, u.days), used: make([]bool, u.days)}
		u.rows[k] = d
	}
	return d
}

// mark sets the days [a, b) meets, clipped to the range, when that is a
// positive length of time.
func (u *usage) mark(days []bool, a, b time.Time) bool {
	a, b = later(a, u.start), earlier(b, u.end)
	if !a.Before(b) {
		return false
	}
	for i := int(a.Sub(u.start) / Day); i <= int((b.Sub(u.start)-1)/Day); i++ {
		days[i] = true
	}
	return true
}

func (u *usage) held(k usageKey, a, b time.Time) { u.mark(u.of(k).entitled, a, b) }

// subscriptions sweeps one pair's starts and ends in time order: after
// all the changes of an instant, the count holds until the next one.
func (u *usage) subscriptions(k usageKey, ds []delta) {
	slices.SortStableFunc(ds, func(a, b delta) int { return a.t.Compare(b.t) })
	d, n := u.of(k), 0
	for i := 0; i < len(ds); {
		t := ds[i].t
		for ; i < len(ds) && ds[i].t.Equal(t); i++ {
			n += ds[i].n
		}
		if n <= 0 || i == len(ds) {
			continue
		}
		if u.mark(d.used, t, ds[i].t) {
			a, b := later(t, u.start), earlier(ds[i].t, u.end)
			d.live += time.Duration(n) * b.Sub(a)
			d.row.PeakConcurrent = max(d.row.PeakConcurrent, n)
		}
	}
}

// query counts a select that succeeded, for each venue and the feed it
// names (a table with a venue column); statement is absent from records
// that did not parse, which did not succeed.
func (u *usage) query(r *Record, subject string) {
	if r.Time.Before(u.start) || !r.Time.Before(u.end) || str(r, AttrOutcome) != "ok" ||
		str(r, "statement") != "select" {
		return
	}
	rowsV, _ := r.Attr(AttrRows)
	rows, _ := rowsV.Int64()
	for _, k := range recordPairs(r, subject) {
		d := u.of(k)
		d.row.Queries++
		d.row.RowsRead += rows
		if rows > 0 {
			u.mark(d.used, r.Time, r.Time.Add(1))
		}
	}
}

// recordSubject is the record's sub, or its client_id when it has none.
func recordSubject(r *Record) string {
	for _, key := range []string{AttrSubject, AttrClient} {
		if v, ok := r.Attr(key); ok {
			if s, _ := v.Str(); s != "" {
				return s
			}
		}
	}
	return ""
}

// str is the record's string attribute key, "" when it has none.
func str(r *Record, key string) string {
	v, _ := r.Attr(key)
	s, _ := v.Str()
	return s
}

// recordPairs are the pairs a subscription or query record names: its
// feed with its venue, or with each of its venues (a subscription or
// query of several venues counts under each).
func recordPairs(r *Record, subject string) []usageKey {
	feed := str(r, AttrFeed)
	if subject == "" || feed == "" {
		return nil
	}
	venues := []string{str(r, AttrVenue)}
	if v, ok := r.Attr(AttrVenues); ok {
		venues, _ = v.List()
	}
	var out []usageKey
	for _, venue := range slices.Compact(slices.Sorted(slices.Values(venues))) {
		if venue != "" {
			out = append(out, usageKey{subject, venue, feed})
		}
	}
	return out
}

// pairsOf reads VENUE:feed texts as the subject's pairs; a text without
// a colon is skipped.
func pairsOf(subject string, list []string) []usageKey {
	var out []usageKey
	for _, s := range list {
		if venue, feed, ok := strings.Cut(s, ":"); ok && venue != "" && feed != "" {
			out = append(out, usageKey{subject, venue, feed})
		}
	}
	slices.SortFunc(out, func(a, b usageKey) int {
		return cmp.Or(strings.Compare(a.venue, b.venue), strings.Compare(a.feed, b.feed))
	})
	return slices.Compact(out)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
