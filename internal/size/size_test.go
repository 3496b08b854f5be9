package size

import (
	"testing"

	"gopkg.in/yaml.v3"
)

func TestBytesYAML(t *testing.T) {
	cases := []struct {
		in      string
		want    Bytes
		written string
	}{
		{"1024", 1024, "1KiB"},
		{"512GiB", 512 << 30, "512GiB"},
		{"80GB", 80 << 30, "80GiB"},
		{"1TiB", 1 << 40, "1TiB"},
	}
	for _, tc := range cases {
		var b Bytes
		if err := yaml.Unmarshal([]byte(tc.in), &b); err != nil || b != tc.want {
			t.Errorf("%s: %d, %v; want %d", tc.in, b, err, tc.want)
			continue
		}
		out, err := yaml.Marshal(b)
		if err != nil || string(out) != tc.written+"\n" {
			t.Errorf("%s written as %q, %v; want %s", tc.in, out, err, tc.written)
		}
	}
	for _, bad := range []string{"lots", "-1GiB", "12 apples"} {
		var b Bytes
		if err := yaml.Unmarshal([]byte(bad), &b); err == nil {
			t.Errorf("%s read as %d, want an error", bad, b)
		}
	}
}

// FuzzBytes: any text reads as a size or fails, and a size read writes back to the same size
// (up to 1 PiB: larger ones are written through a float and may come back a few bytes off).
func FuzzBytes(f *testing.F) {
	for _, s := range []string{"1024", "512GiB", "80GB", "1.5TiB", "-1", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var b Bytes
		if err := b.UnmarshalYAML(func(v any) error { *v.(*string) = s; return nil }); err != nil || b > 1<<50 {
			return
		}
		out, err := b.MarshalYAML()
		if err != nil {
			t.Fatal(err)
		}
		var again Bytes
		if err := again.UnmarshalYAML(func(v any) error { *v.(*string) = out.(string); return nil }); err != nil || again != b {
			t.Fatalf("%q read as %d, written %q, read back %d (%v)", s, b, out, again, err)
		}
	})
}
