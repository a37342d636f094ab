package labelset

import "testing"

// TestOrderCheck checks the order check of Add and AddString, whose fast
// paths decide from the first eight bytes or the first byte, against the
// plain comparison of name, then value: over names that share prefixes of
// every length around those edges, and equal names.
func TestOrderCheck(t *testing.T) {
	names := []string{"", "a", "b", "ab", "abc", "abcd", "abce", "abcd0", "abc\xff", "abd", "cluster", "code", "container", "abcdefg", "abcdefgh", "abcdefgi", "abcdefgh0", "abcdefgh1",
		"abcdefgi0", "abcdefg\xff", "abcdefgh\xff", "\xff", "\xffa", "__name__", "_", "job", "jobs", "le", "label_01", "label_02", "label_010"}
	values := []string{"", "1", "2"}
	for _, a := range names {
		for _, b := range names {
			for _, va := range values {
				for _, vb := range values {
					want := b < a || b == a && vb < va
					for _, bytes := range []bool{true, false} {
						var s Set
						if bytes {
							s.Add([]byte(a), []byte(va))
							s.Add([]byte(b), []byte(vb))
						} else {
							s.AddString(a, va)
							s.AddString(b, vb)
						}
						if s.unsorted != want {
							t.Fatalf("%s: (%q, %q) then (%q, %q): unsorted = %v, want %v", kind(bytes), a, va, b, vb, s.unsorted, want)
						}
					}
				}
			}
		}
	}
}

func kind(bytes bool) string {
	if bytes {
		return "Add"
	}
	return "AddString"
}
