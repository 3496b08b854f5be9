package jobclass

import "testing"

// TestDefaults: the default classes at their boundaries (what rules and scaler count when the
// config names none).
func TestDefaults(t *testing.T) {
	cases := []struct {
		name  string
		shape Shape
		want  string
	}{
		{"eight CPUs, no GPU", Shape{CPUs: 8}, "light"},
		{"nine CPUs", Shape{CPUs: 9}, "medium"},
		{"one GPU", Shape{CPUs: 1, GPUs: 1}, "medium"},
		{"two GPUs", Shape{GPUs: 2}, "heavy"},
		{"a partition no class names", Shape{Partition: "etl", CPUs: 2}, "light"},
	}
	for _, tc := range cases {
		if got := Classify(Defaults(), tc.shape); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestClassifyFallsToTheLast: a shape no class fits (a config that skipped validation) takes
// the last class rather than none.
func TestClassifyFallsToTheLast(t *testing.T) {
	zero := 0
	classes := []Class{{Name: "cpu", MaxGPUs: &zero}, {Name: "etl", Partitions: []string{"etl"}}}
	if got := Classify(classes, Shape{GPUs: 1}); got != "etl" {
		t.Errorf("Classify = %s, want etl", got)
	}
}
