package views

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/BurntSushi/toml"
	"github.com/boxoffice/boxoffice"
	"github.com/nicksnyder/go-i18n/v2/i18n"
	"golang.org/x/text/language"
)

// The site's languages, as base language tags. Korean comes first: it is
// the default (DEFAULT_LANG) and the first in the language switch.
const (
	Korean  = "ko"
	English = "en"
)

// Langs lists the site's languages in the order the language switch shows
// them. Each has a catalog, locales/<tag>.toml, with the same message ids
// (views/catalog_test.go checks both ways). To add a language, add its
// catalog and its tag here.
var Langs = []string{Korean, English}

//go:embed locales/*.toml
var localeFiles embed.FS

var (
	bundle     = i18n.NewBundle(language.Korean)
	localizers = map[string]*i18n.Localizer{}
	matcher    language.Matcher
	// Catalogs holds each language's messages, by id, as its catalog file
	// has them (for the catalog tests).
	Catalogs = map[string]map[string]*i18n.Message{}
)

func init() {
	bundle.RegisterUnmarshalFunc("toml", toml.Unmarshal)
	tags := make([]language.Tag, len(Langs))
	for i, l := range Langs {
		f, err := bundle.LoadMessageFileFS(localeFiles, "locales/"+l+".toml")
		if err != nil {
			panic(fmt.Sprintf("views: catalog of %s: %v", l, err))
		}
		Catalogs[l] = map[string]*i18n.Message{}
		for _, m := range f.Messages {
			Catalogs[l][m.ID] = m
		}
		localizers[l] = i18n.NewLocalizer(bundle, l)
		tags[i] = language.MustParse(l)
	}
	matcher = language.NewMatcher(tags)
}

// ValidLang reports whether lang is one of Langs.
func ValidLang(lang string) bool {
	_, ok := localizers[lang]
	return ok
}

// MatchLang returns the language of Langs that an Accept-Language header
// asks for, or def when it asks for none of them, names none, or cannot be
// read: a malformed header never fails a request. Its answers are kept
// (matchedLangs), since parsing the header costs more than all the rest of
// a request's middleware. Safe for concurrent use.
func MatchLang(acceptLanguage, def string) string {
	if strings.TrimSpace(acceptLanguage) == "" || len(acceptLanguage) > 1024 {
		return def
	}
	k := matchKey{acceptLanguage, def}
	if lang, ok := matchedLangs.Load(k); ok {
		return lang.(string)
	}
	lang := matchLang(acceptLanguage, def)
	if matchedCount.Load() < maxMatchedLangs {
		if _, loaded := matchedLangs.LoadOrStore(k, lang); !loaded {
			matchedCount.Add(1)
		}
	}
	return lang
}

// matchedLangs keeps MatchLang's answer (a string) for each header and
// default (matchKey) it was asked about, up to about maxMatchedLangs of
// them (matchedCount): browsers send few distinct headers, and a client
// that sends a new one each time is answered by parsing it, as without the
// copy, while the copy stays within maxMatchedLangs headers of at most
// 1 KiB.
var (
	matchedLangs sync.Map
	matchedCount atomic.Int32
)

const maxMatchedLangs = 512

type matchKey struct{ header, def string }

// matchLang is MatchLang without the copy.
func matchLang(acceptLanguage, def string) string {
	tags, _, err := language.ParseAcceptLanguage(acceptLanguage)
	if err != nil || len(tags) == 0 {
		return def
	}
	_, i, confidence := matcher.Match(tags...)
	if confidence < language.High {
		return def
	}
	return Langs[i]
}

// Lang returns the language of ctx (boxoffice.LangFromContext), Korean when
// it has none or one the site does not speak.
func Lang(ctx context.Context) string {
	if l := boxoffice.LangFromContext(ctx); ValidLang(l) {
		return l
	}
	return Korean
}

// T returns the message id in ctx's language, with args as name, value
// pairs for its template (see boxoffice.M): T(ctx, "hold_limit", "Limit", 5).
// It is how templates, handlers and errors get a sentence.
func T(ctx context.Context, id boxoffice.MsgID, args ...any) string {
	return In(Lang(ctx), boxoffice.M(id, args...))
}

// Say returns m in ctx's language.
func Say(ctx context.Context, m boxoffice.Msg) string { return In(Lang(ctx), m) }

// In returns m in lang. Arguments that are a boxoffice.Msg are put into
// lang first, and a boxoffice.At is shown as LocalTime shows it; "Count" picks the plural form
// and, an int, is shown with lang's digit grouping. A message missing from the
// catalog (a bug the catalog tests catch) shows its id and is logged.
func In(lang string, m boxoffice.Msg) string {
	l, known := localizers[lang]
	if !known {
		l = localizers[Korean]
	}
	plain := len(m.Args) == 0 && known
	if plain {
		if s, ok := plainMessages.Load(plainKey{lang, m.ID}); ok {
			return s.(string)
		}
	}
	data := make(map[string]any, len(m.Args))
	for k, v := range m.Args {
		switch a := v.(type) {
		case boxoffice.Msg:
			v = In(lang, a)
		case boxoffice.At:
			v = localTime(lang, a.Time, a.Zone)
		}
		data[k] = v
	}
	cfg := &i18n.LocalizeConfig{MessageID: string(m.ID), TemplateData: data}
	if n, ok := data["Count"]; ok {
		cfg.PluralCount = n
		if i, ok := n.(int); ok {
			data["Count"] = printer(lang).Sprint(i) // "15,000": grouped as lang groups digits
		}
	}
	s, err := l.Localize(cfg)
	if err != nil {
		var nf *i18n.MessageNotFoundErr
		if errors.As(err, &nf) || s == "" {
			slog.Error("views: message not found", "lang", lang, "id", m.ID, "err", err)
			return string(m.ID)
		}
	}
	if plain && err == nil {
		plainMessages.Store(plainKey{lang, m.ID}, s)
	}
	return s
}

// plainMessages keeps the sentence (a string) of each message asked for
// without arguments, by language and id (plainKey): such a sentence never
// changes, and go-i18n matches the language and executes the template
// again on every call. Only messages of Langs found in their catalog are
// kept, so it holds at most the catalogs' messages.
var plainMessages sync.Map

type plainKey struct {
	lang string
	id   boxoffice.MsgID
}
