package boxoffice_test

import (
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
)

func TestSignup_Validate(t *testing.T) {
	tests := []struct {
		name   string
		in     boxoffice.Signup
		fields []string
	}{
		{"OK", boxoffice.Signup{Email: " Fan@Example.com ", Password: "longenough", Name: "Fan"}, nil},
		{"Empty", boxoffice.Signup{}, []string{"email", "password", "name"}},
		{"Malformed", boxoffice.Signup{Email: "not-an-email", Password: "longenough", Name: "Fan"}, []string{"email"}},
		{"DisplayName", boxoffice.Signup{Email: "Fan <fan@example.com>", Password: "longenough", Name: "Fan"}, []string{"email"}},
		{"Short", boxoffice.Signup{Email: "fan@example.com", Password: "short", Name: "Fan"}, []string{"password"}},
		{"Overlong", boxoffice.Signup{Email: strings.Repeat("a", 250) + "@x.io", Password: strings.Repeat("p", 73), Name: strings.Repeat("n", 101)}, []string{"email", "password", "name"}},
		{"OverlongAccents", boxoffice.Signup{Email: "fan@example.com", Password: strings.Repeat("é", 40), Name: "Fan"}, []string{"password"}},
		{"Role", boxoffice.Signup{Email: "fan@example.com", Password: "longenough", Name: "Fan", Role: "root"}, []string{"role"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.in
			s.Normalize()
			err := s.Validate()
			if len(tt.fields) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var e *boxoffice.Error
			if !errorsAs(err, &e) || e.Code != boxoffice.EINVALID {
				t.Fatalf("Validate() = %v, want code %s", err, boxoffice.EINVALID)
			}
			if len(e.Fields) != len(tt.fields) {
				t.Errorf("fields = %v, want exactly %v", e.Fields, tt.fields)
			}
			for _, f := range tt.fields {
				if e.Fields[f].ID == "" {
					t.Errorf("fields = %v, want a reason for %q", e.Fields, f)
				}
			}
		})
	}
}

func TestSignup_Normalize(t *testing.T) {
	s := boxoffice.Signup{Email: "  Fan@Example.COM ", Name: " Kim "}
	s.Normalize()
	if s.Email != "fan@example.com" || s.Name != "Kim" || s.Role != boxoffice.RoleFan {
		t.Fatalf("Normalize() gave %+v, want lower-cased trimmed e-mail, trimmed name, role fan", s)
	}
}
