package boxoffice_test

import (
	"net/url"
	"reflect"
	"testing"

	"github.com/boxoffice/boxoffice"
)

func TestParseQuery(t *testing.T) {
	unreadable := func(name string) boxoffice.Msg { return boxoffice.M("val_filter_unreadable", "Name", name) }
	repeated := func(name string) boxoffice.Msg { return boxoffice.M("val_filter_repeated", "Name", name) }
	for _, tt := range []struct {
		name   string
		raw    string
		q      url.Values
		faults map[string]boxoffice.Msg
	}{
		{"Empty", "", url.Values{}, map[string]boxoffice.Msg{}},
		{"OK", "event=7&q=kim%40x&q2=a+b&flag&&", url.Values{"event": {"7"}, "q": {"kim@x"}, "q2": {"a b"}, "flag": {""}}, map[string]boxoffice.Msg{}},
		{"BadValue", "after=%%%&event=7", url.Values{"event": {"7"}}, map[string]boxoffice.Msg{"after": unreadable("after")}},
		{"BadName", "%zz=1&event=7", url.Values{"event": {"7"}}, map[string]boxoffice.Msg{"%zz": unreadable("%zz")}},
		{"Semicolon", "event=7;status=PAID&q=x", url.Values{"q": {"x"}}, map[string]boxoffice.Msg{"event": unreadable("event")}},
		{"BadAndGood", "after=1&after=%", url.Values{}, map[string]boxoffice.Msg{"after": unreadable("after")}},
		{"Repeated", "status=PAID&status=PAID&tag=1&tag=2", url.Values{"tag": {"1", "2"}}, map[string]boxoffice.Msg{"status": repeated("status")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q, faults := boxoffice.ParseQuery(tt.raw, "status", "event")
			if !reflect.DeepEqual(q, tt.q) || !reflect.DeepEqual(faults, tt.faults) {
				t.Errorf("ParseQuery(%q) = %v, %v; want %v, %v", tt.raw, q, faults, tt.q, tt.faults)
			}
		})
	}
}
