package audit_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/audit"
)

// row is a usage row in short: subject, venue, feed, days entitled, days
// used, peak, subscription-minutes, queries, rows read.
func row(sub, venue, feed string, entitled, used, peak int, minutes float64, queries, rows int64) audit.UsageRow {
	return audit.UsageRow{Subject: sub, Venue: venue, Feed: feed, DaysEntitled: entitled, DaysUsed: used,
		PeakConcurrent: peak, SubscriptionMinutes: minutes, Queries: queries, RowsRead: rows}
}

// TestUsage runs scripted days of two instances and several runs through
// Writers and compares Usage's rows with the figures worked out by hand.
// Each case names what it failed on when the rule it holds was broken on
// purpose.
func TestUsage(t *testing.T) {
	for _, tt := range []struct {
		name     string
		script   func(s *scribe)
		from, to int // days, 1 is day1
		want     []audit.UsageRow
		ended    int // subscriptions ended at their run's end
	}{{
		// It failed when intervals were not clipped to the range (60
		// minutes).
		name: "a subscription crossing midnight and the range's start",
		script: func(s *scribe) {
			s.at(1, 23, 0).snapshot("a", "alice", "ASX:quotes")
			s.at(1, 23, 30).subscribe("a", "alice", "s1", "ASX", "quotes", true)
			s.at(2, 0, 30).subscribe("a", "alice", "s1", "ASX", "quotes", false)
		},
		from: 2, to: 2,
		want: []audit.UsageRow{row("alice", "ASX", "quotes", 1, 1, 1, 30, 0, 0)},
	}, {
		name: "a subscription crossing the range's end",
		script: func(s *scribe) {
			s.at(1, 0, 0).snapshot("a", "alice", "ASX:quotes")
			s.at(1, 23, 50).subscribe("a", "alice", "s1", "ASX", "quotes", true)
			s.at(2, 0, 20).subscribe("a", "alice", "s1", "ASX", "quotes", false)
		},
		from: 1, to: 1,
		want: []audit.UsageRow{row("alice", "ASX", "quotes", 1, 1, 1, 10, 0, 0)},
	}, {
		// It failed when a missing end was left open to the range's end
		// (1620 minutes, peak 2).
		name: "runs ending without the subscription's end",
		script: func(s *scribe) {
			s.at(1, 0, 0).snapshot("a", "alice", "ASX:quotes")
			s.at(1, 10, 0).subscribe("a", "alice", "s1", "ASX", "quotes", true)
			s.at(1, 10, 30).query("a", "bob", "ok", 0, "NZX").end("a", true) // crashed: its last record
			s.at(1, 11, 0).subscribe("a", "alice", "s2", "ASX", "quotes", true)
			s.at(1, 11, 45).end("a", false) // its final checkpoint
			s.at(1, 12, 0).subscribe("a", "alice", "s3", "ASX", "quotes", true).
				subscribe("a", "alice", "s3", "ASX", "quotes", false)
		},
		from: 1, to: 1,
		want: []audit.UsageRow{row("alice", "ASX", "quotes", 1, 1, 1, 75, 0, 0),
			row("bob", "NZX", "quotes", 0, 0, 0, 0, 1, 0)},
		ended: 2,
	}, {
		// It failed when subscriptions were counted per instance (alice
		// split in two, a peak of 2 on instance a).
		name: "peak concurrency across instances",
		script: func(s *scribe) {
			s.at(1, 0, 0).snapshot("a", "alice", "ASX:quotes")
			s.at(1, 10, 0).subscribe("a", "alice", "s1", "ASX", "quotes", true)
			s.at(1, 10, 30).subscribe("b", "alice", "s2", "ASX", "quotes", true)
			s.at(1, 10, 45).subscribe("a", "alice", "s1", "ASX", "quotes", true)
			s.at(1, 10, 50).subscribe("a", "alice", "s1", "ASX", "quotes", false)
			s.at(1, 11, 0).subscribe("a", "alice", "s1", "ASX", "quotes", false)
			s.at(1, 11, 30).subscribe("b", "alice", "s2", "ASX", "quotes", false)
			s.at(1, 11, 30).subscribe("b", "alice", "s2", "ASX", "depth", true)
			s.at(1, 11, 40).subscribe("b", "alice", "s2", "ASX", "depth", false)
		},
		from: 1, to: 1,
		want: []audit.UsageRow{row("alice", "ASX", "depth", 0, 1, 1, 10, 0, 0),
			row("alice", "ASX", "quotes", 1, 1, 3, 125, 0, 0)},
	}, {
		// It failed when the count was read after each record, not after
		// all the records of an instant (peak 2).
		name: "back to back subscriptions are not concurrent",
		script: func(s *scribe) {
			s.at(1, 0, 0).snapshot("a", "alice", "ASX:quotes")
			s.at(1, 10, 0).subscribe("b", "alice", "s2", "ASX", "quotes", true)
			s.at(1, 11, 0).subscribe("a", "alice", "s1", "ASX", "quotes", true)
			s.at(1, 11, 0).subscribe("b", "alice", "s2", "ASX", "quotes", false)
			s.at(1, 12, 0).subscribe("a", "alice", "s1", "ASX", "quotes", false)
		},
		from: 1, to: 1,
		want: []audit.UsageRow{row("alice", "ASX", "quotes", 1, 1, 1, 120, 0, 0)},
	}, {
		// It failed when a change added to the set instead of replacing
		// it (ASX:quotes 3 days).
		name: "entitlement changes mid-day",
		script: func(s *scribe) {
			s.at(1, 0, 0).snapshot("a", "alice", "ASX:quotes")
			s.at(2, 12, 0).change("b", "alice", "NZX:quotes")
			s.at(3, 0, 0).snapshot("a", "alice", "NZX:quotes")
			s.at(3, 9, 0).change("a", "alice", "NZX:quotes", "ASX:depth").change("a", "alice", "NZX:quotes")
			s.at(3, 10, 0).change("b", "carol", "ASX:depth")
		},
		from: 1, to: 3,
		want: []audit.UsageRow{row("alice", "ASX", "quotes", 2, 0, 0, 0, 0, 0),
			row("alice", "NZX", "quotes", 2, 0, 0, 0, 0, 0), row("carol", "ASX", "depth", 1, 0, 0, 0, 0, 0)},
	}, {
		// It failed when queries that were refused counted (ASX:quotes 3
		// queries), and when writes counted as reads (ASX:quotes 14 rows).
		name: "queries",
		script: func(s *scribe) {
			s.at(1, 0, 0).snapshot("a", "alice", "ASX:quotes", "NZX:quotes")
			s.at(1, 9, 0).query("a", "alice", "ok", 5, "ASX", "NZX")
			s.at(1, 9, 5).query("b", "alice", "forbidden", 0, "ASX")
			s.at(2, 9, 0).query("b", "alice", "ok", 0, "ASX")
			s.add("b", audit.KindQuery, audit.String(audit.AttrSubject, "alice"), audit.Strings(audit.AttrVenues, "ASX"),
				audit.String("statement", "select"), audit.String(audit.AttrFeed, "depth"), audit.Int(audit.AttrRows, 2),
				audit.String(audit.AttrOutcome, "ok"))
			s.add("b", audit.KindQuery, audit.String(audit.AttrSubject, "alice"), audit.Strings(audit.AttrVenues, "ASX"),
				audit.String("statement", "update"), audit.String(audit.AttrFeed, "quotes"), audit.Int(audit.AttrRows, 9),
				audit.String(audit.AttrOutcome, "ok"))
			s.add("b", audit.KindQuery, audit.String(audit.AttrClient, "feeder"), audit.Strings(audit.AttrVenues, "NZX"),
				audit.String("statement", "select"), audit.String(audit.AttrFeed, "quotes"), audit.Int(audit.AttrRows, 4),
				audit.String(audit.AttrOutcome, "ok"))
			s.at(3, 9, 0).query("b", "alice", "ok", 7, "ASX") // after the range
		},
		from: 1, to: 2,
		want: []audit.UsageRow{row("alice", "ASX", "depth", 0, 1, 0, 0, 1, 2),
			row("alice", "ASX", "quotes", 2, 1, 0, 0, 2, 5), row("alice", "NZX", "quotes", 2, 1, 0, 0, 1, 5),
			row("feeder", "NZX", "quotes", 0, 1, 0, 0, 1, 4)},
	}, {
		// It failed when a subscription of several venues counted under
		// none.
		name: "a subscription of several venues",
		script: func(s *scribe) {
			s.at(1, 0, 0).snapshot("a", "alice", "ASX:quotes")
			venues := func(start bool) {
				kind := audit.KindSubscriptionEnd
				if start {
					kind = audit.KindSubscriptionStart
				}
				s.add("a", kind, audit.String(audit.AttrSubject, "alice"), audit.String(audit.AttrSession, "s1"),
					audit.Strings(audit.AttrVenues, "NZX", "ASX"), audit.String(audit.AttrFeed, "quotes"))
			}
			s.at(1, 10, 0)
			venues(true)
			s.at(1, 10, 20)
			venues(false)
		},
		from: 1, to: 1,
		want: []audit.UsageRow{row("alice", "ASX", "quotes", 1, 1, 1, 20, 0, 0), row("alice", "NZX", "quotes", 0, 1, 1, 20, 0, 0)},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			s := newScribe(t)
			tt.script(s)
			rep, err := audit.Usage(s.records(), day1.Add(time.Duration(tt.from-1)*audit.Day), day1.Add(time.Duration(tt.to-1)*audit.Day))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rep.Rows, tt.want) {
				t.Errorf("rows:\n got %+v\nwant %+v", rep.Rows, tt.want)
			}
			if rep.EndedAtRunEnd != tt.ended {
				t.Errorf("ended at their run's end: %d, want %d", rep.EndedAtRunEnd, tt.ended)
			}
		})
	}
}

// TestUsageRefusesARangeWithoutSnapshot: a range whose first day has no
// snapshot on it or before it is refused, and one that ends before it
// starts. It failed when the check took any snapshot of the records.
func TestUsageRefusesARangeWithoutSnapshot(t *testing.T) {
	s := newScribe(t)
	s.at(1, 10, 0).change("a", "alice", "ASX:quotes")
	s.at(2, 12, 0).snapshot("a", "alice", "ASX:quotes")
	recs := s.records()
	if _, err := audit.Usage(recs, day1, day1.Add(2*audit.Day)); !errors.Is(err, audit.ErrNoSnapshot) {
		t.Errorf("a range before the first snapshot: %v, want ErrNoSnapshot", err)
	}
	if _, err := audit.Usage(recs, day1.Add(audit.Day), day1.Add(2*audit.Day)); err != nil {
		t.Errorf("a range whose first day has the snapshot: %v", err)
	}
	if _, err := audit.Usage(recs, day1.Add(2*audit.Day), day1.Add(audit.Day)); err == nil {
		t.Error("a range ending before it starts was accepted")
	}
}
