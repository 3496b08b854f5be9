package redfishemu

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"strings"
)

// mockupFS is the trimmed copy of DMTF's public-rackmount1 mockup: only the resources a
// power-control client walks. TestMockupMatchesUpstream keeps it equal to the upstream
// files, whose sums mockup/SHA256SUMS lists (mockup/README.md: source and how to refresh).
//
//go:embed mockup/LICENSE.md mockup/public-rackmount1
var mockupFS embed.FS

// MockupFiles lists the embedded resources (paths under public-rackmount1).
func MockupFiles() ([]string, error) {
	var files []string
	err := fs.WalkDir(mockupFS, "mockup/public-rackmount1", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, strings.TrimPrefix(p, "mockup/public-rackmount1/"))
		}
		return err
	})
	return files, err
}

// MockupFile returns one embedded file (a path under public-rackmount1).
func MockupFile(name string) ([]byte, error) {
	return mockupFS.ReadFile(path.Join("mockup/public-rackmount1", name))
}

// systemPath is the one ComputerSystem of the mockup.
const (
	systemID    = "437XR1138R2"
	systemPath  = "/redfish/v1/Systems/" + systemID
	resetPath   = systemPath + "/Actions/ComputerSystem.Reset"
	sessionsURI = "/redfish/v1/SessionService/Sessions"
)

// resources maps each served URI (no trailing slash) to its decoded mockup document.
type resources map[string]map[string]any

func loadResources() (resources, error) {
	files, err := MockupFiles()
	if err != nil {
		return nil, err
	}
	r := resources{}
	for _, f := range files {
		if path.Base(f) != "index.json" {
			continue
		}
		b, err := MockupFile(f)
		if err != nil {
			return nil, err
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("mockup %s: %w", f, err)
		}
		uri := strings.TrimSuffix("/redfish/v1/"+path.Dir(f), "/.")
		r[uri] = doc
	}
	if r[systemPath] == nil || r["/redfish/v1"] == nil {
		return nil, fmt.Errorf("mockup lacks the service root or system %s", systemID)
	}
	return r, nil
}

// clone returns a copy of a resource's top level, so a handler can set top-level properties
// (PowerState, Members) before answering; nested values are shared and must not be changed.
func (r resources) clone(uri string) (map[string]any, bool) {
	doc, ok := r[uri]
	if !ok {
		return nil, false
	}
	return maps.Clone(doc), true
}
