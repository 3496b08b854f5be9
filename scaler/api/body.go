package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/internal/strictjson"
)

// bodyError is a request body refused before it is decoded, with the status that answers it.
type bodyError struct {
	status int
	msg    string
}

func (e *bodyError) Error() string { return e.msg }

// bodyStatus is the status that answers err, an error of readBody or of decoding what it
// read: the one readBody chose, else 400.
func bodyStatus(err error) int {
	if be := (*bodyError)(nil); errors.As(err, &be) {
		return be.status
	}
	return http.StatusBadRequest
}

// readBody reads a request body (the webhook's, an API write's) of at most limit bytes,
// refusing a larger one with 413 before it is read whole, and one with a Content-Encoding with
// 415: rota reads JSON as sent, and gzip's bytes decoded as JSON said only "invalid character
// '\x1f'". Nothing is decompressed, so no small body expands into a large one.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if enc := r.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		w.Header().Set("Accept-Encoding", "identity")
		return nil, &bodyError{http.StatusUnsupportedMediaType, "Content-Encoding " + errtext.Quote(enc) + " is not taken: send the body uncompressed"}
	}
	tooLarge := &bodyError{http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", limit)}
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge
	case err != nil:
		return nil, &bodyError{http.StatusBadRequest, "reading body: " + err.Error()}
	}
	return b, nil
}

// decodeBody reads a request body of at most limit bytes that is one JSON object into v:
// an unknown field (a misspelt "note" would be dropped in silence), a key given twice and
// anything after the object are refused. An empty body is io.EOF, unwrapped.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	b, err := readBody(w, r, limit)
	switch {
	case err != nil:
	case bytes.Equal(bytes.TrimSpace(b), []byte("null")): // encoding/json takes it as nothing
		err = errors.New("null where a JSON object is wanted")
	default:
		err = strictjson.Decode(b, v, strictjson.RefuseUnknown)
	}
	if err == nil || errors.Is(err, io.EOF) {
		return err
	}
	return fmt.Errorf("reading request body: %w", err)
}
