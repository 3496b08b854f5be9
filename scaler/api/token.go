package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"

	"github.com/rotahq/rota/internal/secretfile"
)

const redacted = "<secret>"

// maxTokenFile bounds what ReadTokenFile reads.
const maxTokenFile = 4096

// Token is a bearer token. It never prints, logs or marshals its value.
type Token struct {
	value string
}

// NewToken wraps a token value (tests and the client).
func NewToken(v string) Token { return Token{value: v} }

// ReadTokenFile reads a token from path: the file's content with surrounding whitespace
// trimmed; an empty file is an error, and so is a file every user may read or write (a token
// anyone on the machine can read, or replace, guards nothing: it is refused as ssh refuses such
// a key). The error names the file, never its content.
func ReadTokenFile(path string) (Token, error) {
	b, err := secretfile.Read("token file", path, maxTokenFile)
	if err != nil {
		return Token{}, err
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return Token{}, fmt.Errorf("token file %s is empty", path)
	}
	// What no Authorization header can carry (a line break, a control character) would make a
	// token no client can send: the API or the webhook refused to all, or every rotactl call
	// failing with net/http's "invalid header field value", neither naming the file.
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return Token{}, fmt.Errorf("token file %s holds a line break or control character (byte %d of %d): a token is one line, which an HTTP header can carry", path, i+1, len(v))
		}
	}
	return Token{value: v}, nil
}

// IsZero reports whether no token is set.
func (t Token) IsZero() bool { return t.value == "" }

// String implements fmt.Stringer without revealing the token.
func (t Token) String() string { return redacted }

// GoString implements fmt.GoStringer without revealing the token.
func (t Token) GoString() string { return redacted }

// MarshalText implements encoding.TextMarshaler without revealing the token.
func (t Token) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// bearer returns the Authorization header value for the token.
func (t Token) bearer() string { return "Bearer " + t.value }

// matches compares got with the token in constant time; hashing first hides the length too.
func (t Token) matches(got string) bool {
	want, have := sha256.Sum256([]byte(t.value)), sha256.Sum256([]byte(got))
	return !t.IsZero() && subtle.ConstantTimeCompare(want[:], have[:]) == 1
}

// The answers of checkBearer.
var (
	errNoCredentials = errors.New("rota wants a bearer token")
	errBadToken      = errors.New("wrong bearer token")
)

// schemes are the HTTP authentication schemes a 401 names (IANA's registry, and Token): a
// header's first word is named only when it is one of them, as it may be the credentials
// themselves (a token sent without its scheme, followed by anything).
var schemes = map[string]string{
	"basic": "Basic", "digest": "Digest", "negotiate": "Negotiate", "ntlm": "NTLM", "hoba": "HOBA",
	"mutual": "Mutual", "scram-sha-1": "SCRAM-SHA-1", "scram-sha-256": "SCRAM-SHA-256", "vapid": "vapid",
	"dpop": "DPoP", "gnap": "GNAP", "privatetoken": "PrivateToken", "concealed": "Concealed", "token": "Token",
}

// checkBearer checks an Authorization header against want: errNoCredentials (401), saying
// what the header held instead (its scheme, never its credentials), when it is absent or not
// a bearer token; errBadToken (403) when the token is wrong.
func checkBearer(header string, want Token) error {
	scheme, tok, ok := strings.Cut(header, " ")
	switch {
	case header == "":
		return fmt.Errorf("no Authorization header: %w", errNoCredentials)
	case !ok:
		return fmt.Errorf("an Authorization header without a scheme: %w (\"Bearer <token>\")", errNoCredentials)
	case !strings.EqualFold(scheme, "Bearer"):
		if name, known := schemes[strings.ToLower(scheme)]; known {
			return fmt.Errorf("an Authorization header of scheme %s: %w", name, errNoCredentials)
		}
		return fmt.Errorf("an Authorization header with a scheme other than Bearer: %w", errNoCredentials)
	case strings.TrimSpace(tok) == "":
		return fmt.Errorf("an empty bearer token: %w", errNoCredentials)
	}
	if !want.matches(strings.TrimSpace(tok)) {
		return errBadToken
	}
	return nil
}
