package main

import "testing"

func TestGCSettings(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	tests := []struct {
		name    string
		vars    map[string]string
		memory  uint64
		percent int
		limit   int64
	}{
		{"Defaults", nil, 8 << 30, defaultGCPercent, 6 << 30},
		{"MemoryUnknown", nil, 0, defaultGCPercent, -1},
		{"GOGCSet", map[string]string{"GOGC": "100"}, 8 << 30, -1, 6 << 30},
		{"GOMEMLIMITSet", map[string]string{"GOMEMLIMIT": "1GiB"}, 8 << 30, defaultGCPercent, -1},
		{"BothSet", map[string]string{"GOGC": "off", "GOMEMLIMIT": "1GiB"}, 8 << 30, -1, -1},
		{"HugeMemory", nil, 1 << 63, defaultGCPercent, 1 << 62},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			percent, limit := gcSettings(env(tt.vars), tt.memory)
			if percent != tt.percent || limit != tt.limit {
				t.Errorf("gcSettings = %d, %d; want %d, %d", percent, limit, tt.percent, tt.limit)
			}
		})
	}
}
