package bmc

import (
	"fmt"
	"strings"
	"testing"
)

// TestPickSystemEdges: what the emulator does not serve: a BMC with no system, and one with
// too many to list.
func TestPickSystemEdges(t *testing.T) {
	if _, err := pickSystem(nil, ""); err == nil || !strings.Contains(err.Error(), "serves no ComputerSystem") {
		t.Errorf("no system: %v", err)
	}
	var many []redfishSystem
	for i := range 20 {
		many = append(many, redfishSystem{URI: fmt.Sprintf("/redfish/v1/Systems/%d", i), Name: "System"})
	}
	_, err := pickSystem(many, "")
	if err == nil || !strings.Contains(err.Error(), `"System" at /redfish/v1/Systems/7, and 12 more): set system_name`) {
		t.Errorf("twenty systems: %v", err)
	}
	if _, err := pickSystem(many[:1], "System"); err != nil {
		t.Errorf("one system, named: %v", err)
	}
}
