package plan

import "testing"

func TestOverlapNamesTheFiltersThatShareASubject(t *testing.T) {
	for _, tt := range []struct {
		a, b  []string
		wantA string
		wantB string
		want  bool
	}{
		{[]string{"a.b"}, []string{"a.b"}, "a.b", "a.b", true},
		{[]string{"a.b"}, []string{"a.c"}, "", "", false},
		{[]string{"a.*"}, []string{"a.c"}, "a.*", "a.c", true},
		{[]string{"a.>"}, []string{"a.b.c"}, "a.>", "a.b.c", true},
		{[]string{"a.>"}, []string{"a"}, "", "", false},
		{[]string{"a.*"}, []string{"a.b.c"}, "", "", false},
		{[]string{">"}, []string{"x.y"}, ">", "x.y", true},
		{[]string{"*.b"}, []string{"a.*"}, "*.b", "a.*", true},
		{[]string{"x.1", "x.2"}, []string{"y.>", "x.*"}, "x.1", "x.*", true},
		{nil, []string{"x.y"}, ">", "x.y", true},
		{[]string{"x.y"}, nil, "x.y", ">", true},
	} {
		a, b, ok := overlap(tt.a, tt.b)
		if a != tt.wantA || b != tt.wantB || ok != tt.want {
			t.Errorf("overlap(%q, %q) = %q, %q, %v; want %q, %q, %v", tt.a, tt.b, a, b, ok, tt.wantA, tt.wantB, tt.want)
		}
	}
}
