package views_test

import (
	"go/ast"
	"go/constant"
	"go/types"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"golang.org/x/tools/go/packages"
)

// usedIDs type-checks every package of the module (the generated templ
// code included, tests left out) and returns every constant of type
// boxoffice.MsgID in it: each literal passed as a message id, each id in a
// table, each M(...) or T(...) call's id. It also returns the places where
// a MsgID is made from a value that is not a constant (a computed id, which
// no test could check), so that the drift test cannot be fooled by ids it
// cannot see, nor by ids that only appear in comments or other strings.
var usedIDs = sync.OnceValues(func() (map[boxoffice.MsgID][]string, []string) {
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo, Dir: ".."}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		panic(err)
	}
	used := map[boxoffice.MsgID][]string{}
	var computed []string
	for _, p := range pkgs {
		for _, e := range p.Errors {
			panic(e.Error())
		}
		for expr, tv := range p.TypesInfo.Types {
			named, ok := tv.Type.(*types.Named)
			if !ok || named.Obj().Name() != "MsgID" || named.Obj().Pkg().Path() != "github.com/boxoffice/boxoffice" {
				continue
			}
			pos := p.Fset.Position(expr.Pos()).String()
			if tv.Value != nil {
				if tv.Value.Kind() == constant.String && constant.StringVal(tv.Value) != "" {
					id := boxoffice.MsgID(constant.StringVal(tv.Value))
					used[id] = append(used[id], pos)
				}
				continue
			}
			// A non-constant MsgID made by conversion from a string
			// (MsgID(s), MsgID("x" + s)) is an id no test can see.
			if call, ok := expr.(*ast.CallExpr); ok && len(call.Args) == 1 {
				if arg := p.TypesInfo.Types[call.Args[0]]; arg.Value == nil && !types.Identical(arg.Type, named) {
					computed = append(computed, pos)
				}
			}
		}
	}
	return used, computed
})

// Every message id the code uses is in every catalog, no catalog has an id
// the code no longer uses, and no id is computed at run time.
func TestCatalogs_MatchCode(t *testing.T) {
	used, computed := usedIDs()
	if len(used) < 100 {
		t.Fatalf("found %d message ids in the code; the search is broken", len(used))
	}
	for _, pos := range computed {
		t.Errorf("%s: a message id is computed at run time; use a constant id (a switch or a table)", pos)
	}
	for _, lang := range views.Langs {
		catalog := views.Catalogs[lang]
		var missing, unused []string
		for id, where := range used {
			if catalog[string(id)] == nil {
				missing = append(missing, string(id)+" (used at "+where[0]+")")
			}
		}
		for id := range catalog {
			if _, ok := used[boxoffice.MsgID(id)]; !ok {
				unused = append(unused, id)
			}
		}
		sort.Strings(missing)
		sort.Strings(unused)
		if len(missing) > 0 {
			t.Errorf("locales/%s.toml lacks %d ids:\n  %s", lang, len(missing), strings.Join(missing, "\n  "))
		}
		if len(unused) > 0 {
			t.Errorf("locales/%s.toml has %d ids no code uses:\n  %s", lang, len(unused), strings.Join(unused, "\n  "))
		}
	}
}

// Every message has the plural forms its language needs: "other" in each,
// and "one" in English where it has a count.
func TestCatalogs_PluralForms(t *testing.T) {
	for _, lang := range views.Langs {
		for id, m := range views.Catalogs[lang] {
			if m.Other == "" {
				t.Errorf("%s: %s has no text (other)", lang, id)
			}
			if lang == views.Korean && (m.One != "" || m.Few != "" || m.Many != "") {
				t.Errorf("ko: %s has plural forms Korean does not use; only other", id)
			}
		}
	}
	for id, m := range views.Catalogs[views.English] {
		if strings.Contains(m.Other, ".Count") && m.One == "" {
			t.Errorf("en: %s takes a count but has no \"one\" form", id)
		}
	}
}

// The languages of the switch are the catalogs' languages, Korean first.
func TestCatalogs_Langs(t *testing.T) {
	if views.Langs[0] != views.Korean || !slices.Contains(views.Langs, views.English) {
		t.Errorf("Langs = %v, want Korean first and English", views.Langs)
	}
	for _, l := range views.Langs {
		if len(views.Catalogs[l]) == 0 {
			t.Errorf("no catalog for %s", l)
		}
	}
}
