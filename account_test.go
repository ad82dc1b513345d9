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
		{"FullWidthOK", boxoffice.Signup{Email: "ｆａｎ@ｅｘａｍｐｌｅ.com", Password: "longenough", Name: "김팬"}, nil},
		{"NameBidiOverride", boxoffice.Signup{Email: "fan@example.com", Password: "longenough", Name: "Fan\u202egnp.exe"}, []string{"name"}},
		{"NameIsolate", boxoffice.Signup{Email: "fan@example.com", Password: "longenough", Name: "Fan\u2067x"}, []string{"name"}},
		{"NameControl", boxoffice.Signup{Email: "fan@example.com", Password: "longenough", Name: "Fan\x07"}, []string{"name"}},
		{"NameNewline", boxoffice.Signup{Email: "fan@example.com", Password: "longenough", Name: "Fan\nAdmin"}, []string{"name"}},
		{"NameZeroWidthSpace", boxoffice.Signup{Email: "fan@example.com", Password: "longenough", Name: "\u200b"}, []string{"name"}},
		{"NameInvisibleOnly", boxoffice.Signup{Email: "fan@example.com", Password: "longenough", Name: "\u200b \u3164\u200d\u2800\u0301"}, []string{"name"}},
		{"NameZeroWidthJoinerInside", boxoffice.Signup{Email: "fan@example.com", Password: "longenough", Name: "김\u200d팬"}, nil},
		{"DomainIDNARefuses", boxoffice.Signup{Email: "fan@exa_mple..com", Password: "longenough", Name: "Fan"}, []string{"email"}},
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

func TestEmailKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"fan@example.com", "fan@example.com"},
		{" FAN@Example.COM ", "fan@example.com"},
		{"ｆａｎ@example.com", "fan@example.com"},
		{"fan@ｅｘａｍｐｌｅ.com", "fan@example.com"},
		{"ＦＡＮ@ＥＸＡＭＰＬＥ．ＣＯＭ", "fan@example.com"},
		{"Straße@example.com", "strasse@example.com"},
		{"fan@bücher.example", "fan@xn--bcher-kva.example"},
		{"fan@BÜCHER.example", "fan@xn--bcher-kva.example"},
		{"fan@xn--bcher-kva.example", "fan@xn--bcher-kva.example"},
		{"팬@예시.한국", "팬@xn--vv4b11d.xn--3e0b707e"},
	}
	for _, tt := range tests {
		got, err := boxoffice.EmailKey(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("EmailKey(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "fan", "@example.com", "fan@", "fan@exa mple.com"} {
		if got, err := boxoffice.EmailKey(bad); err == nil {
			t.Errorf("EmailKey(%q) = %q, nil; want an error", bad, got)
		}
	}
}
