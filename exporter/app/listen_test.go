package app

import (
	"strings"
	"testing"
)

// TestVsockPort: a vsock:// listen address is read as exporter-toolkit reads it, and one that
// names no usable port is refused naming the flag and the address.
func TestVsockPort(t *testing.T) {
	cases := []struct {
		address string
		want    uint32
		err     string
	}{
		{address: "vsock://:9100", want: 9100},
		{address: "vsock://3:10090", want: 10090},
		{address: "vsock://:4294967295", want: 4294967295},
		{address: "vsock://:4294967296", err: `port "4294967296" is not a number from 0 to 4294967295`},
		{address: "vsock://:-1", err: `invalid port ":-1"`},
		{address: "vsock://9100", err: "missing port"},
		{address: "vsock://:port", err: `invalid port ":port"`},
		{address: "vsock://%zz:1", err: "invalid URL escape"},
	}
	for _, tc := range cases {
		t.Run(tc.address, func(t *testing.T) {
			got, err := vsockPort(tc.address)
			switch {
			case tc.err == "" && (err != nil || got != tc.want):
				t.Errorf("got %d, %v; want %d", got, err, tc.want)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "--web.listen-address "+`"`+tc.address)):
				t.Errorf("got %d, %v; want an error naming the flag, the address and %q", got, err, tc.err)
			}
		})
	}
}

// FuzzVsockPort: any listen address is either read or refused naming the flag; none panics.
func FuzzVsockPort(f *testing.F) {
	for _, seed := range []string{"vsock://:9100", "vsock://3:10090", "vsock://[::1]:1", "vsock://:", "vsock://a:b:c", "vsock://%zz:1"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, address string) {
		if _, err := vsockPort(address); err != nil && !strings.HasPrefix(err.Error(), "--web.listen-address ") {
			t.Errorf("%q: %v does not name the flag", address, err)
		}
	})
}
