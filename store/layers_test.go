package store_test

import (
	"go/types"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// The store is an adapter of PostgreSQL and Redis and never talks to the PG
// (package checkout orchestrates the two): its code, tests aside, imports
// no package of the PG (payment/..., checkout), directly or through its
// dependencies, nor net/http itself (Prometheus's client, a dependency,
// does, for its own handler); it never names boxoffice.PaymentGateway; and no
// field of its types holds anything with a method of the gateway (Confirm,
// GetPayment, GetPaymentByOrderID, Cancel, CheckoutURL, Currencies with the
// gateway's signatures), such as a narrower interface of the PG's.
func TestStore_NoPaymentGateway(t *testing.T) {
	const root = "github.com/boxoffice/boxoffice"
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps | packages.NeedTypes | packages.NeedTypesInfo}
	pkgs, err := packages.Load(cfg, root+"/store")
	if err != nil || len(pkgs) != 1 || len(pkgs[0].Errors) > 0 {
		t.Fatalf("load the store: %v %v", err, pkgs)
	}
	store := pkgs[0]

	packages.Visit(pkgs, nil, func(p *packages.Package) {
		if p == store {
			return
		}
		if p.PkgPath == root+"/checkout" || strings.HasPrefix(p.PkgPath, root+"/payment") {
			t.Errorf("the store depends on %s", p.PkgPath)
		}
	})
	if _, ok := store.Imports["net/http"]; ok {
		t.Error("the store imports net/http")
	}

	domain := store.Imports[root]
	if domain == nil {
		t.Fatalf("the store does not import %s", root)
	}
	gateway := domain.Types.Scope().Lookup("PaymentGateway")
	iface, ok := gateway.Type().Underlying().(*types.Interface)
	if !ok {
		t.Fatalf("boxoffice.PaymentGateway is %v, want an interface", gateway)
	}
	for id, obj := range store.TypesInfo.Uses {
		if obj == gateway {
			t.Errorf("%s names boxoffice.PaymentGateway", store.Fset.Position(id.Pos()))
		}
	}
	scope := store.Types.Scope()
	for _, name := range scope.Names() {
		st, ok := scope.Lookup(name).Type().Underlying().(*types.Struct)
		if !ok {
			continue
		}
		for i := range st.NumFields() {
			f := st.Field(i)
			for j := range iface.NumMethods() {
				m := iface.Method(j)
				got, _, _ := types.LookupFieldOrMethod(f.Type(), true, m.Pkg(), m.Name())
				if fn, ok := got.(*types.Func); ok && types.Identical(fn.Type().(*types.Signature), m.Type().(*types.Signature)) {
					t.Errorf("store.%s.%s (%s) has the gateway's %s", name, f.Name(), f.Type(), m.Name())
				}
			}
		}
	}
}
