package redfishemu

import "net/http"

// The chassis' power resources the mockup links to (Chassis/1U: Power, EnvironmentMetrics).
// The trimmed mockup does not carry them: they are built here, in the shape of DMTF's
// public-rackmount1, with the reading following the server's power state.
const (
	chassisPath      = "/redfish/v1/Chassis/1U"
	chassisPowerPath = chassisPath + "/Power"
	environmentPath  = chassisPath + "/EnvironmentMetrics"
)

// Watts is what the server draws now: the on draw while on or changing state, the standby
// draw while off.
func (s *Server) Watts() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wattsLocked()
}

func (s *Server) wattsLocked() float64 {
	if s.power == powerOff {
		return s.cfg.PowerWatts.Off
	}
	if s.cfg.PowerWatts.On == 0 {
		return DefaultOnWatts
	}
	return s.cfg.PowerWatts.On
}

func (s *Server) servePower(w http.ResponseWriter, uri string) {
	if s.cfg.PowerWatts.None || (s.cfg.PowerWatts.PowerOnly && uri == environmentPath) {
		writeError(w, http.StatusNotFound, "Base.1.0.ResourceMissingAtURI", "resource not found: "+uri)
		return
	}
	watts := s.Watts()
	if uri == environmentPath {
		writeJSON(w, http.StatusOK, map[string]any{
			"@odata.type": "#EnvironmentMetrics.v1_3_0.EnvironmentMetrics", "@odata.id": environmentPath,
			"Id": "EnvironmentMetrics", "Name": "Chassis Environment Metrics",
			"PowerWatts": map[string]any{"Reading": watts},
		}, "")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"@odata.type": "#Power.v1_7_1.Power", "@odata.id": chassisPowerPath, "Id": "Power", "Name": "Power",
		"PowerControl": []any{map[string]any{
			"@odata.id": chassisPowerPath + "#/PowerControl/0", "MemberId": "0", "Name": "System Input Power",
			"PowerConsumedWatts": watts,
			"RelatedItem":        []any{map[string]any{"@odata.id": systemPath}, map[string]any{"@odata.id": chassisPath}},
		}},
	}, "")
}
