package marketblast

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// TestTemplates: every blast message is a JSON object whose Data holds
// the Sent stamp at the offset given, then the update's topic and its
// quote; the messages are Count distinct updates of about 290 bytes, and
// each compresses alone (FrameBytes) to less than its plain frame. It
// failed with the stamp's offset one byte off (the client would read no
// latency), and with the blast cut to the first update.
func TestTemplates(t *testing.T) {
	msgs, sentAt := Templates("Bench!3")
	if len(msgs) != Count {
		t.Fatalf("%d messages, want %d", len(msgs), Count)
	}
	seen := map[string]bool{}
	for i, m := range msgs {
		var v struct {
			Controller, Topic, Action string
			Data                      map[string]any
		}
		if err := json.Unmarshal(m, &v); err != nil {
			t.Fatalf("message %d: %v: %s", i, err, m)
		}
		if v.Topic != "Bench!3" || v.Action != "Sub" || !strings.HasPrefix(v.Data["Of"].(string), "Security!") || v.Data["Last"] == nil {
			t.Fatalf("message %d: %s", i, m)
		}
		if _, err := strconv.ParseInt(string(m[sentAt:sentAt+len(stamp)]), 10, 64); err != nil || !strings.HasSuffix(string(m[:sentAt]), `"Sent":`) {
			t.Fatalf("message %d: no stamp at %d: %s", i, sentAt, m)
		}
		if len(m) < 250 || len(m) > 330 {
			t.Fatalf("message %d is %d bytes", i, len(m))
		}
		seen[string(m)] = true
	}
	if len(seen) < Count*9/10 {
		t.Fatalf("%d distinct messages of %d", len(seen), Count)
	}
	plain, compressed, err := FrameBytes(msgs, 3)
	if err != nil || compressed >= plain*0.9 {
		t.Fatalf("frames of %.0f bytes compressed to %.0f (%v)", plain, compressed, err)
	}
	t.Logf("mean frame %.1f bytes, compressed alone at level 3 %.1f (%.3f)", plain, compressed, compressed/plain)
}
