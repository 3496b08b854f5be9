package output

import (
	"errors"
	"strings"
	"testing"
)

// TestCapped: what fits is kept whole; the write that would pass the cap fails, and every
// write after it, so a program is stopped at the cap and not partway through a later write.
func TestCapped(t *testing.T) {
	c := &Capped{Max: 10}
	for _, w := range []string{"0123", "45678"} {
		if _, err := c.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
	}
	if c.Over() || string(c.Bytes()) != "012345678" {
		t.Fatalf("over %v, kept %q", c.Over(), c.Bytes())
	}
	for _, w := range []string{"9a", "b"} {
		if n, err := c.Write([]byte(w)); n != 0 || !errors.Is(err, ErrTooMuch) {
			t.Fatalf("write %q past the cap: %d, %v", w, n, err)
		}
	}
	if !c.Over() || string(c.Bytes()) != "012345678" {
		t.Fatalf("over %v, kept %q", c.Over(), c.Bytes())
	}
}

// TestCappedStorage: filled to its cap by writes of any size, a Capped's storage never passes
// Max (a bytes.Buffer's doubling took it to about twice near the cap: 2 MiB for this 1 MiB and
// a little, written a byte at a time), and it keeps every write until the one that would pass
// the cap.
func TestCappedStorage(t *testing.T) {
	const max = 1<<20 + 1000
	for _, tc := range []struct {
		name string
		// sizes are the writes, in order, the last repeated until one is refused.
		sizes []int
	}{
		{"a byte at a time", []int{1}},
		{"os/exec's 32 KiB reads", []int{32 << 10}},
		{"odd sizes", []int{1, 7777}},
		{"one write of the whole cap", []int{max, 1}},
		{"one byte short of the cap, then bytes", []int{max - 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Capped{Max: max}
			kept, refused := 0, 0
			for i := 0; refused == 0; i++ {
				n := tc.sizes[min(i, len(tc.sizes)-1)]
				if _, err := c.Write(make([]byte, n)); err != nil {
					refused = n
				} else {
					kept += n
				}
				if cap(c.Bytes()) > max {
					t.Fatalf("storage of %d bytes holding %d, over the cap %d", cap(c.Bytes()), kept, max)
				}
			}
			if len(c.Bytes()) != kept || kept+refused <= max {
				t.Fatalf("holds %d bytes of %d written, refused a write of %d under the cap %d",
					len(c.Bytes()), kept, refused, max)
			}
		})
	}
}

// TestTail: the last Max bytes are kept, whatever the size of each write, and no write fails.
func TestTail(t *testing.T) {
	for _, writes := range [][]string{
		{"short"},
		{"0123456789", "abcdef"},
		{strings.Repeat("x", 100) + "0123456789"},
		{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"},
	} {
		tl := &Tail{Max: 8}
		all := ""
		for _, w := range writes {
			if n, err := tl.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("write %q: %d, %v", w, n, err)
			}
			all += w
		}
		if want := all[max(0, len(all)-8):]; tl.String() != want {
			t.Errorf("%q: kept %q, want %q", writes, tl.String(), want)
		}
	}
}
