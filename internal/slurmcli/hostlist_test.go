package slurmcli

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestExpandHostlist(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"empty", "", nil},
		{"one name", "node1", []string{"node1"}},
		{"plain list", "node1,gpu01", []string{"node1", "gpu01"}},
		{"range and single", "node[1-3,7]", []string{"node1", "node2", "node3", "node7"}},
		{"zero padded", "gpu[01-04]", []string{"gpu01", "gpu02", "gpu03", "gpu04"}},
		{"padding across a decade", "n[08-11]", []string{"n08", "n09", "n10", "n11"}},
		{"unpadded across a decade", "n[9-10]", []string{"n9", "n10"}},
		{"two groups", "rack[1-2]-n[3-4]", []string{"rack1-n3", "rack1-n4", "rack2-n3", "rack2-n4"}},
		{"suffix after brackets", "n[1-2]-ib", []string{"n1-ib", "n2-ib"}},
		{"lists mixed", "node[1-2],gpu[01,03],login", []string{"node1", "node2", "gpu01", "gpu03", "login"}},
		{"single in brackets", "node[5]", []string{"node5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ExpandHostlist(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestExpandHostlistErrors(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"unclosed", "node[1-3"},
		{"unopened", "node1-3]"},
		{"backwards", "node[3-1]"},
		{"empty brackets", "node[]"},
		{"letters in range", "node[a-c]"},
		{"empty name", "node1,,node2"},
		{"trailing comma", "node1,"},
		{"too many", "n[1-99999999]"},
		{"product too large", "a[1-1000]b[1-1000]"},
		{"negative", "n[-1-2]"},
		{"too many groups", strings.Repeat("[0]", 9)},
		{"name too long", strings.Repeat("n", 256)},
		// Slurm reads a space or a tab as a separator and never prints one: a name holding one
		// matches no node.
		{"space after a comma", "n[1-2], n3"},
		{"space between names", "n1 n2"},
		{"tab in brackets", "n[1,\t2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := ExpandHostlist(tc.in); !errors.Is(err, ErrHostlist) {
				t.Fatalf("got %q, %v; want ErrHostlist", got, err)
			}
		})
	}
}

// TestExpandHostlistNamesItsLimit: a hostlist past MaxHosts fails naming MaxHosts, whichever
// of its names passes it: each is expanded within the room the ones before it leave, a smaller
// limit the error must not name.
func TestExpandHostlistNamesItsLimit(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"one range", "n[1-65537]"},
		{"a later range", "a[1-60000],b[1-10000]"},
		{"a later product", "a[1-60000],b[1-3]c[1-4000]"},
		{"a plain name after a full list", "n[1-65536],x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ExpandHostlist(tc.in)
			if !errors.Is(err, ErrHostlist) || !strings.Contains(err.Error(), ": more than 65536 names") {
				t.Fatalf("got %v, want ErrHostlist saying more than 65536 names", err)
			}
		})
	}
}

// FuzzExpandHostlist: never panics, never exceeds MaxHosts, every name is non-empty and free of
// the list syntax and of white space, and a plain comma-separated list expands to itself.
func FuzzExpandHostlist(f *testing.F) {
	for _, s := range []string{"", "node1", "node[1-3,7]", "gpu[01-04]", "rack[1-2]-n[3-4]", "a,b[1-2]", "n[1-99999999]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := ExpandHostlist(s)
		if err != nil {
			return
		}
		if len(names) > MaxHosts {
			t.Fatalf("%d names", len(names))
		}
		for _, n := range names {
			if n == "" || strings.ContainsAny(n, "[],"+hostSpace) {
				t.Fatalf("%q gave name %q", s, n)
			}
		}
		if !strings.ContainsAny(s, "[]") && s != "" && !slices.Equal(names, strings.Split(s, ",")) {
			t.Fatalf("%q gave %q", s, names)
		}
	})
}
