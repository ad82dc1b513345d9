package boxoffice

import (
	"context"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"
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
	// Lang is the language the account chose with the language switch (a
	// base tag such as "ko"), "" until it chooses; log-in puts it in the
	// language cookie.
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

// Normalize trims the e-mail and name and lower-cases the e-mail, so that one
// address cannot open two accounts by case.
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
	}
	if s.Role != RoleFan && s.Role != RoleAdmin {
		f["role"] = M("val_role_unknown")
	}
	return Invalid(f)
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
}
