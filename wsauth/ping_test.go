package wsauth

import (
	"strconv"
	"testing"
	"time"
)

// TestPingsAnsweredByTag: a pong answers the ping whose tag it carries and
// every older one; a pong with another tag, or with a payload that is no
// tag, answers nothing. It failed when any pong answered the oldest ping
// (a client that sends pongs unasked, and reads nothing, then looked
// alive), and when a pong answered its own ping alone.
func TestPingsAnsweredByTag(t *testing.T) {
	var p clientPings
	t0 := time.Unix(1000, 0)
	var tags []string
	for i := range 3 {
		payload, overdue := p.Send(t0.Add(time.Duration(i)*time.Second), time.Minute)
		if overdue {
			t.Fatalf("ping %d overdue", i)
		}
		if _, err := strconv.ParseUint(string(payload), 16, 64); err != nil {
			t.Fatalf("payload %q is no tag: %v", payload, err)
		}
		tags = append(tags, string(payload))
	}
	for _, data := range []string{"", "not a tag", strconv.FormatUint(1, 16), tags[0] + "0"} {
		if p.Pong(data); p.Len() != 3 {
			t.Fatalf("pong %q answered a ping: %d left, want 3", data, p.Len())
		}
	}
	if p.Pong(tags[1]); p.Len() != 1 {
		t.Fatalf("the second ping's pong left %d pings, want the third alone", p.Len())
	}
	if p.Pong(tags[0]); p.Len() != 1 {
		t.Fatal("the pong of a ping already answered answered another")
	}
	if p.Pong(tags[2]); p.Len() != 0 {
		t.Fatalf("%d pings left, want none", p.Len())
	}
}

// TestPingsOverdue: Send reports overdue once the oldest unanswered ping
// is older than the timeout, and then notes no ping; an answered ping no
// longer counts, and at most maxPingsOut are remembered, the oldest
// forgotten first. It failed when overdue was measured from the newest
// ping (a ping every interval never grew old).
func TestPingsOverdue(t *testing.T) {
	var p clientPings
	t0 := time.Unix(1000, 0)
	first, _ := p.Send(t0, 10*time.Second)
	if _, overdue := p.Send(t0.Add(5*time.Second), 10*time.Second); overdue {
		t.Fatal("overdue after 5 s, timeout 10 s")
	}
	if _, overdue := p.Send(t0.Add(10*time.Second), 10*time.Second); overdue {
		t.Fatal("overdue at the timeout itself")
	}
	if _, overdue := p.Send(t0.Add(10*time.Second+1), 10*time.Second); !overdue {
		t.Fatal("not overdue past the timeout")
	}
	if p.Len() != 3 {
		t.Fatalf("%d pings noted, want 3 (an overdue Send notes none)", p.Len())
	}
	p.Pong(string(first))
	if _, overdue := p.Send(t0.Add(10*time.Second+1), 10*time.Second); overdue {
		t.Fatal("overdue counted from a ping answered")
	}

	var q clientPings
	for i := range maxPingsOut + 4 {
		if _, overdue := q.Send(t0.Add(time.Duration(i)*time.Second), time.Hour); overdue {
			t.Fatalf("ping %d overdue", i)
		}
	}
	if q.Len() != maxPingsOut {
		t.Fatalf("%d pings remembered, want %d", q.Len(), maxPingsOut)
	}
	// The oldest remembered was sent at t0+4s.
	if _, overdue := q.Send(t0.Add(4*time.Second+time.Hour), time.Hour); overdue {
		t.Fatal("overdue counted from a ping forgotten")
	}
}
