package schedule

import (
	"strconv"
	"strings"
)

// calendar holds the Quartz-style calendar items of a cron expression's
// day-of-month and day-of-week fields (L, L-n, nW, LW, d#n, dL). They are
// stored as bit sets so that matching a day stays allocation-free.
type calendar struct {
	lastMinus uint32   // day-of-month: bit k set: "L-k" (k 0..30; "L" is L-0)
	nearestW  uint32   // day-of-month: bit n set: "nW" (n 1..31)
	lastW     bool     // day-of-month: "LW"
	nth       [7]uint8 // day-of-week: nth[d] bit n set: "d#n" (n 1..5)
	lastDow   uint8    // day-of-week: bit d set: "dL"
}

func (k *calendar) domAny() bool { return k.lastMinus != 0 || k.nearestW != 0 || k.lastW }

func (k *calendar) dowAny() bool {
	return k.lastDow != 0 || k.nth != [7]uint8{}
}

// domMatches reports whether day d (weekday wd, 0 = Sunday) of a month with
// dim days matches a day-of-month calendar item.
func (k *calendar) domMatches(d, wd, dim int) bool {
	if dim-d <= 30 && k.lastMinus&(1<<uint(dim-d)) != 0 {
		return true
	}
	if wd == 0 || wd == 6 {
		return false // W items only ever pick a weekday
	}
	if k.lastW && (d == dim || (wd == 5 && d >= dim-2)) {
		return true
	}
	if k.nearestW == 0 {
		return false
	}
	if k.nearestW&(1<<uint(d)) != 0 {
		return true // nW where day n is itself a weekday
	}
	if wd == 5 && d+1 <= dim && k.nearestW&(1<<uint(d+1)) != 0 {
		return true // n is a Saturday: the Friday before
	}
	if wd == 1 && d >= 2 && k.nearestW&(1<<uint(d-1)) != 0 {
		return true // n is a Sunday: the Monday after (n < dim since d <= dim)
	}
	if wd == 1 && d == 3 && k.nearestW&(1<<1) != 0 {
		return true // the 1st is a Saturday: Monday the 3rd (not the last day of the month before)
	}
	if wd == 5 && d == dim-2 && k.nearestW&(1<<uint(dim)) != 0 {
		return true // the last day is a Sunday: the Friday before (not the 1st of the month after)
	}
	return false
}

// dowMatches reports whether day d (weekday wd) of a month with dim days
// matches a day-of-week calendar item.
func (k *calendar) dowMatches(d, wd, dim int) bool {
	if k.nth[wd]&(1<<uint((d-1)/7+1)) != 0 {
		return true
	}
	return k.lastDow&(1<<uint(wd)) != 0 && d+7 > dim
}

var dowNames = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

// splitCalendar takes the calendar items out of the day-of-month (dom) and
// day-of-week (dow) fields. It returns the fields with those items removed
// (for robfig's parser; a field made only of calendar items becomes
// placeholder, whose bits the caller clears) and the items. A calendar item
// in a list ("1,15,L") is accepted; ranges and steps of calendar items are not.
func splitCalendar(dom, dow string) (domRest, dowRest string, domCal, dowCal bool, k calendar, err error) {
	var rest []string
	for _, it := range strings.Split(dom, ",") {
		u := strings.ToUpper(it)
		switch {
		case u == "L":
			k.lastMinus |= 1
		case u == "LW":
			k.lastW = true
		case strings.HasPrefix(u, "L-"):
			n, ok := smallInt(u[2:], 0, 30)
			if !ok {
				return "", "", false, false, k, errorf("cron", "day-of-month %q: L-n wants n from 0 to 30 (days before the last day of the month)", it)
			}
			k.lastMinus |= 1 << uint(n)
		case strings.HasSuffix(u, "W"):
			n, ok := smallInt(u[:len(u)-1], 1, 31)
			if !ok {
				return "", "", false, false, k, errorf("cron", "day-of-month %q: nW wants one day n from 1 to 31 (no range, list or step), or LW", it)
			}
			k.nearestW |= 1 << uint(n)
		case strings.ContainsAny(u, "LW#"):
			return "", "", false, false, k, errorf("cron", "day-of-month %q: L, W may only appear as L, L-n, nW or LW (and # only in day-of-week)", it)
		default:
			rest = append(rest, it)
			continue
		}
		domCal = true
	}
	domRest = dom
	if domCal {
		domRest = strings.Join(rest, ",")
	}
	rest = rest[:0]
	for _, it := range strings.Split(dow, ",") {
		u := strings.ToLower(it)
		switch {
		case strings.Contains(u, "#"):
			i := strings.IndexByte(u, '#')
			d, okd := weekday(u[:i])
			n, okn := smallInt(u[i+1:], 1, 5)
			if !okd || !okn {
				return "", "", false, false, k, errorf("cron", "day-of-week %q: d#n wants a weekday d (0-6 with 0 = Sunday, or sun-sat) and n from 1 to 5", it)
			}
			k.nth[d] |= 1 << uint(n)
		case strings.HasSuffix(u, "l"):
			d, ok := weekday(u[:len(u)-1])
			if !ok {
				return "", "", false, false, k, errorf("cron", "day-of-week %q: dL wants a weekday d (0-6 with 0 = Sunday, or sun-sat) before L (L alone is not accepted: write 6L for the last Saturday)", it)
			}
			k.lastDow |= 1 << uint(d)
		case strings.ContainsAny(u, "wl"):
			if _, isName := dowNames[u]; !isName && !strings.Contains(u, "-") && !strings.Contains(u, "/") {
				return "", "", false, false, k, errorf("cron", "day-of-week %q: W is for day-of-month; day-of-week takes d#n or dL", it)
			}
			rest = append(rest, it)
			continue
		default:
			rest = append(rest, it)
			continue
		}
		dowCal = true
	}
	dowRest = dow
	if dowCal {
		dowRest = strings.Join(rest, ",")
	}
	return domRest, dowRest, domCal, dowCal, k, nil
}

// smallInt parses a decimal integer in [lo, hi] written with digits only.
func smallInt(s string, lo, hi int) (int, bool) {
	if s == "" || len(s) > 2 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= lo && n <= hi
}

// weekday parses 0-6 (0 = Sunday) or a three-letter name.
func weekday(s string) (int, bool) {
	if d, ok := dowNames[s]; ok {
		return d, true
	}
	return smallInt(s, 0, 6)
}
