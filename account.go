package boxoffice

import (
	"context"
	"errors"
	"net/mail"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Account roles.
const (
	RoleFan   = "fan"
	RoleAdmin = "admin"
)

// Limits on account fields, in characters (runes) unless marked.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 72  // bytes: bcrypt reads no further
	MaxEmailLen    = 254 // RFC 5321's limit on a forward path
	MaxNameLen     = 100
)

// Account is a person who buys tickets (RoleFan) or runs sales (RoleAdmin).
type Account struct {
	ID    int64
	Email string
	Name  string
	Role  string
	// Lang is the account's language (a base tag such as "ko"): the one its
	// sign-up page was shown in, then the one it chose with the language
	// switch ("" for accounts made without a request, such as create-admin's);
	// log-in puts it in the language cookie.
	Lang      string
	CreatedAt time.Time
}

// IsAdmin reports whether the account may use the admin pages.
func (a *Account) IsAdmin() bool { return a != nil && a.Role == RoleAdmin }

// Signup is the input of a new account; Password is the plain text, hashed by
// the store and never kept.
type Signup struct {
	Email    string
	Password string
	Name     string
	Role     string
	Lang     string // the language the visitor signed up in, "" for none
}

// Normalize trims the e-mail and name and lower-cases the e-mail for
// display. Accounts are told apart by EmailKey, not by this form.
func (s *Signup) Normalize() {
	s.Email = strings.ToLower(strings.TrimSpace(s.Email))
	s.Name = strings.TrimSpace(s.Name)
	if s.Role == "" {
		s.Role = RoleFan
	}
}

// Validate returns an EINVALID error naming every bad field at once (empty or
// malformed e-mail, short or overlong password, empty or overlong name), or nil.
// Call Normalize first.
func (s *Signup) Validate() error {
	f := map[string]Msg{}
	switch {
	case s.Email == "":
		f["email"] = M("val_email_empty")
	case utf8.RuneCountInString(s.Email) > MaxEmailLen:
		f["email"] = M("val_email_long")
	default:
		if a, err := mail.ParseAddress(s.Email); err != nil || a.Address != s.Email || !strings.Contains(s.Email, "@") {
			f["email"] = M("val_email_malformed")
		} else if _, err := EmailKey(s.Email); err != nil {
			f["email"] = M("val_email_malformed")
		}
	}
	switch {
	case utf8.RuneCountInString(s.Password) < MinPasswordLen:
		f["password"] = M("val_password_short", "Min", MinPasswordLen)
	case len(s.Password) > MaxPasswordLen:
		f["password"] = M("val_password_long", "Max", MaxPasswordLen)
	}
	switch n := utf8.RuneCountInString(s.Name); {
	case n == 0:
		f["name"] = M("val_name_empty")
	case n > MaxNameLen:
		f["name"] = M("val_name_long", "Max", MaxNameLen)
	case !PrintableName(s.Name):
		f["name"] = M("val_name_chars")
	case !VisibleName(s.Name):
		f["name"] = M("val_name_invisible")
	}
	if s.Role != RoleFan && s.Role != RoleAdmin {
		f["role"] = M("val_role_unknown")
	}
	return Invalid(f)
}

// EmailKey returns the form under which e-mail addresses are compared, so
// that one mailbox holds one account: the address in Unicode NFKC, case
// folded, with the domain mapped by IDNA (UTS #46, the lookup profile) to
// its ASCII form. "ｆａｎ@ｅｘａｍｐｌｅ.com", "FAN@example.com" and
// "fan@example.com" have one key, "fan@example.com". Errors: an address
// without "@" or with a domain IDNA refuses.
func EmailKey(email string) (string, error) {
	s := norm.NFKC.String(cases.Fold().String(norm.NFKC.String(strings.TrimSpace(email))))
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at == len(s)-1 {
		return "", errors.New("e-mail address without a local part and a domain")
	}
	domain, err := idna.Lookup.ToASCII(s[at+1:])
	if err != nil {
		return "", err
	}
	return s[:at+1] + domain, nil
}

// PrintableName reports whether name has no control character and no
// bidirectional formatting character (overrides, embeddings, isolates and
// marks, which can make a name display as something else).
func PrintableName(name string) bool {
	for _, r := range name {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return false
		}
	}
	return true
}

// VisibleName reports whether name has at least one character that shows:
// a letter, digit, punctuation mark or symbol that Unicode does not mark as
// ignorable (zero-width spaces and joiners, the Hangul fillers) and that is
// not the blank Braille pattern. Spaces and combining marks alone show
// nothing.
func VisibleName(name string) bool {
	for _, r := range name {
		if unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S) &&
			!unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) && r != '\u2800' {
			return true
		}
	}
	return false
}

// ValidateLogin returns an EINVALID error naming "email" or "password" when
// they are longer than any account's can be (MaxEmailLen characters,
// MaxPasswordLen bytes: Validate refuses such at sign-up), or nil. A log-in
// refuses them before any look-up, so a script cannot make the server hash or
// store (as a rate-limit key) a long string.
func ValidateLogin(email, password string) error {
	f := map[string]Msg{}
	if utf8.RuneCountInString(strings.TrimSpace(email)) > MaxEmailLen {
		f["email"] = M("val_email_long")
	}
	if len(password) > MaxPasswordLen {
		f["password"] = M("val_login_password_long", "Max", MaxPasswordLen)
	}
	return Invalid(f)
}

// AccountService stores accounts and checks passwords.
type AccountService interface {
	// CreateAccount validates s, hashes its password and stores the account.
	// Errors: EINVALID with Fields (including a taken e-mail, "email").
	CreateAccount(ctx context.Context, s Signup) (*Account, error)
	// Authenticate returns the account whose e-mail and password match.
	// Errors: EINVALID (ValidateLogin) for an e-mail or password too long to
	// be any account's; EUNAUTHORIZED for an unknown e-mail or a wrong
	// password alike.
	Authenticate(ctx context.Context, email, password string) (*Account, error)
	// FindAccountByID returns the account. Errors: ENOTFOUND.
	FindAccountByID(ctx context.Context, id int64) (*Account, error)
	// SetAccountLang stores the language the account chose (a base tag
	// such as "ko"). Errors: ENOTFOUND.
	SetAccountLang(ctx context.Context, id int64, lang string) error
	// EmailCollisions returns the accounts that shared a mailbox with an
	// older account when e-mail keys were introduced (EmailKey), oldest
	// first; such an account cannot log in until an admin settles it.
	EmailCollisions(ctx context.Context) ([]EmailCollision, error)
}

// EmailCollision is an account whose e-mail has the key (EmailKey) of an
// older account's, found by the migration that introduced the keys: it was
// left as it was, without a key, for an admin to settle.
type EmailCollision struct {
	Account Account // the account left without a key
	Kept    Account // the older account that kept the key
	Key     string
}
