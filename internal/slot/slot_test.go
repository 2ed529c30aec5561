package slot

import "testing"

// The values come from the Redis Cluster specification (CRC16 of
// "123456789" is 0x31C3) and from redis-server's CLUSTER KEYSLOT.
func TestOf(t *testing.T) {
	for key, want := range map[string]int{
		"123456789":            0x31C3 % Count,
		"foo":                  12182,
		"bar":                  5061,
		"{user1000}.following": Of("user1000"),
		"{user1000}.followers": Of("user1000"),
		"foo{}{bar}":           Of("foo{}{bar}"[:]), // empty first tag: the whole key is hashed
		"foo{{bar}}zap":        Of("{bar"),          // the tag is "{bar"
		"foo{bar}{zap}":        Of("bar"),           // only the first tag counts
		"":                     0,
	} {
		if got := Of(key); got != want {
			t.Errorf("Of(%q) = %d, want %d", key, got, want)
		}
	}
	if Of("foo{}{bar}") != int(crc16("foo{}{bar}")%Count) {
		t.Error("an empty tag must hash the whole key")
	}
}

// TestTag: every slot has a tag, of TagLen bytes, in that slot.
func TestTag(t *testing.T) {
	seen := map[string]bool{}
	for s := range Count {
		tag := Tag(s)
		if len(tag) != TagLen || Of(tag+"key") != s || seen[tag] {
			t.Fatalf("Tag(%d) = %q: length %d, slot %d, seen before %v", s, tag, len(tag), Of(tag+"key"), seen[tag])
		}
		seen[tag] = true
	}
}

func BenchmarkOf(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Of("orders:42:payment")
	}
}
