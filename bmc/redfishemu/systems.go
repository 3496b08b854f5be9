package redfishemu

import (
	"fmt"
	"net/http"
	"strings"
)

const systemsPath = "/redfish/v1/Systems"

// otherSystem is one of the BMC's other ComputerSystems (ServerConfig.OtherSystems); its power
// is guarded by the server's mutex.
type otherSystem struct {
	id, name, power string
}

func newOtherSystems(cfg []SystemConfig) ([]*otherSystem, error) {
	var others []*otherSystem
	for _, sc := range cfg {
		p, err := initialPower(sc.Power)
		if err != nil {
			return nil, fmt.Errorf("other system %s: %w", sc.ID, err)
		}
		name := sc.Name
		if name == "" {
			name = sc.ID
		}
		others = append(others, &otherSystem{id: sc.ID, name: name, power: p})
	}
	return others, nil
}

// OtherPower returns the PowerState of one of the other systems ("" when there is none of
// that Id).
func (s *Server) OtherPower(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.other(id); o != nil {
		return o.power
	}
	return ""
}

// other returns the other system whose Id is id, or nil.
func (s *Server) other(id string) *otherSystem {
	for _, o := range s.others {
		if o.id == id {
			return o
		}
	}
	return nil
}

// otherOf returns the other system a URI under /redfish/v1/Systems/ names and the rest of the
// URI after its Id.
func (s *Server) otherOf(uri string) (*otherSystem, string) {
	rest, ok := strings.CutPrefix(uri, systemsPath+"/")
	if !ok {
		return nil, ""
	}
	id, sub, _ := strings.Cut(rest, "/")
	return s.other(id), sub
}

// serveSystems answers the Systems collection: the server's own system, then the others.
func (s *Server) serveSystems(w http.ResponseWriter) {
	doc, _ := s.res.clone(systemsPath)
	members := []any{map[string]any{"@odata.id": systemPath}}
	for _, o := range s.others {
		members = append(members, map[string]any{"@odata.id": systemsPath + "/" + o.id})
	}
	doc["Members"] = members
	doc["Members@odata.count"] = len(members)
	writeJSON(w, http.StatusOK, doc, "")
}

// serveOther answers an other system: the mockup's system under its Id, Name and power, with
// its own Reset target.
func (s *Server) serveOther(w http.ResponseWriter, o *otherSystem) {
	doc, _ := s.res.clone(systemPath)
	uri := systemsPath + "/" + o.id
	actions := doc["Actions"].(map[string]any)["#ComputerSystem.Reset"].(map[string]any)
	doc["Actions"] = map[string]any{"#ComputerSystem.Reset": map[string]any{
		"target":                            uri + "/Actions/ComputerSystem.Reset",
		"ResetType@Redfish.AllowableValues": actions["ResetType@Redfish.AllowableValues"],
	}}
	s.mu.Lock()
	doc["Id"], doc["Name"], doc["@odata.id"], doc["PowerState"] = o.id, o.name, uri, o.power
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, doc, "")
}

// resetOther carries out a Reset posted to an other system at once.
func (s *Server) resetOther(w http.ResponseWriter, r *http.Request, o *otherSystem) {
	resetType, ok := readResetType(w, r, mockupResets)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.OtherResets = append(s.stats.OtherResets, o.id+":"+resetType)
	s.log.WithFields(map[string]any{"system": o.id, "reset_type": resetType}).Info("reset requested of an other system")
	if target := resetTarget(resetType, o.power); target != "" {
		o.power = target
	}
	w.WriteHeader(http.StatusNoContent)
}
