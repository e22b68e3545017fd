package ui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/dlqctl/dlqctl/pkg/record"
)

type screen int

const (
	scrDLQs screen = iota
	scrGroups
	scrMessages
	scrMessage
	scrConfirm
	scrRun
)

// input is what a line being typed is for.
type input int

const (
	inNone input = iota
	inFilter
	inTo
)

// Model is the UI's state. It is a bubbletea Model; New makes one.
type Model struct {
	ctx  context.Context
	be   Backend
	opts Options
	st   styles

	w, h   int
	scr    screen
	help   bool
	status string

	// DLQs screen.
	dlqs     []DLQ
	listErr  string
	listing  bool
	dlqCur   int
	history  map[string][]int64
	interval time.Duration

	// The DLQ being read and what was read.
	cur      DLQ
	reading  bool
	stopping bool
	readSeq  int
	cancel   context.CancelFunc
	agg      *aggregate
	depth    int64
	complete bool
	note     string
	warnings []string
	readErr  string
	keyIdx   int
	grpCur   int
	grpTop   int

	// Messages and one message.
	grp    *group
	msgCur int
	marked map[string]bool
	vp     viewport.Model

	// Typing a filter or a destination.
	typing input
	line   string
	filter string

	// Actions.
	pending  *action
	back     screen
	run      *runState
	log      []LogEntry
	quitting bool
	wg       *sync.WaitGroup
}

// LogEntry is one command run from the UI, for the session log printed
// when the UI exits.
type LogEntry struct {
	CommandLine string
	Code        int
}

type runState struct {
	act      action
	cancel   context.CancelFunc
	progress map[string]any
	events   []string
	done     bool
	res      RunResult
}

// Messages the model receives from its commands.
type (
	listMsg struct {
		dlqs []DLQ
		err  error
	}
	depthMsg struct {
		ref string
		d   Depth
	}
	tickMsg struct{}
	readMsg struct {
		seq int
		u   ReadUpdate
		ch  <-chan ReadUpdate
	}
	runEventMsg struct {
		ev RunEvent
		ch <-chan any
	}
	runDoneMsg struct{ res RunResult }
)

// New makes the model. refreshEvery is how often depths are read again
// for the sparklines (0: never, for tests).
func New(ctx context.Context, be Backend, opts Options, refreshEvery time.Duration) *Model {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Canary <= 0 {
		opts.Canary = 10
	}
	return &Model{ctx: ctx, be: be, opts: opts, st: newStyles(opts.NoColor), w: 80, h: 24,
		history: map[string][]int64{}, interval: refreshEvery, marked: map[string]bool{}, vp: viewport.New(),
		listing: true, wg: &sync.WaitGroup{}}
}

// Reading says whether a read still holds messages (Wait releases them).
func (m *Model) Reading() bool { return m.reading }

// Log returns the commands run in this session with their exit codes.
func (m *Model) Log() []LogEntry { return m.log }

// Wait waits for the reads and runs the model started to end (every held
// message released); call it after the program returned.
func (m *Model) Wait() {
	if m.cancel != nil {
		m.cancel()
	}
	m.wg.Wait()
}

// Init lists the DLQs.
func (m *Model) Init() tea.Cmd { return m.listCmd() }

func (m *Model) listCmd() tea.Cmd {
	be, ctx := m.be, m.ctx
	return func() tea.Msg {
		d, err := be.ListDLQs(ctx)
		return listMsg{d, err}
	}
}

func (m *Model) tick() tea.Cmd {
	if m.interval <= 0 {
		return nil
	}
	return tea.Tick(m.interval, func(time.Time) tea.Msg { return tickMsg{} })
}

func (m *Model) refreshDepths() tea.Cmd {
	var cmds []tea.Cmd
	for _, d := range m.dlqs {
		ref := d.Ref
		be, ctx := m.be, m.ctx
		cmds = append(cmds, func() tea.Msg {
			dd, err := be.Depth(ctx, ref)
			if err != nil {
				return nil
			}
			return depthMsg{ref, dd}
		})
	}
	return tea.Batch(cmds...)
}

func (m *Model) remember(ref string, d Depth) {
	h := append(m.history[ref], d.Ready+d.Held)
	if len(h) > 30 {
		h = h[len(h)-30:]
	}
	m.history[ref] = h
}

// Update handles a message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = max(msg.Width, 20), max(msg.Height, 8)
		m.sizeViewport()
		return m, nil
	case listMsg:
		m.listing = false
		if msg.err != nil {
			m.listErr = msg.err.Error()
			return m, nil
		}
		m.dlqs = msg.dlqs
		for _, d := range m.dlqs {
			if d.Err == "" {
				m.remember(d.Ref, d.Depth)
			}
		}
		m.dlqCur = min(m.dlqCur, max(0, len(m.dlqs)-1))
		return m, m.tick()
	case tickMsg:
		return m, tea.Batch(m.refreshDepths(), m.tick())
	case depthMsg:
		for i := range m.dlqs {
			if m.dlqs[i].Ref == msg.ref {
				m.dlqs[i].Depth, m.dlqs[i].Err = msg.d, ""
				m.remember(msg.ref, msg.d)
			}
		}
		return m, nil
	case readMsg:
		return m, m.onRead(msg)
	case runEventMsg:
		m.onRunEvent(msg.ev)
		return m, waitRun(msg.ch)
	case runDoneMsg:
		m.run.done, m.run.res = true, msg.res
		m.log = append(m.log, LogEntry{CommandLine(m.run.act.Args), msg.res.Code})
		if m.quitting {
			return m, tea.Quit
		}
		return m, nil
	case tea.KeyPressMsg:
		return m, m.onKey(msg)
	}
	return m, nil
}

func (m *Model) onRead(msg readMsg) tea.Cmd {
	if msg.seq != m.readSeq {
		return nil // a read that was replaced
	}
	u := msg.u
	if u.Start {
		m.warnings, m.depth = u.Warnings, u.Depth
	}
	for i := range u.Items {
		m.agg.add(&u.Items[i])
	}
	if u.End {
		m.reading = false
		m.complete, m.note = u.Complete, u.Note
		if u.Err != nil {
			m.readErr = u.Err.Error()
		}
		if m.quitting && (m.run == nil || m.run.done) {
			return tea.Quit
		}
		return nil
	}
	return waitRead(m.readSeq, msg.ch)
}

func waitRead(seq int, ch <-chan ReadUpdate) tea.Cmd {
	return func() tea.Msg {
		u, ok := <-ch
		if !ok {
			return nil
		}
		// Merge what else is already there into one update.
		for !u.End {
			select {
			case v, ok := <-ch:
				if !ok {
					return readMsg{seq, u, ch}
				}
				u.Items = append(u.Items, v.Items...)
				if v.Start {
					u.Start, u.Warnings, u.Depth = true, v.Warnings, v.Depth
				}
				if v.End {
					u.End, u.Complete, u.Note, u.Err = true, v.Complete, v.Note, v.Err
				}
				continue
			default:
			}
			break
		}
		return readMsg{seq, u, ch}
	}
}

// open starts reading the DLQ at the cursor.
func (m *Model) open(d DLQ) tea.Cmd {
	m.stopRead()
	m.cur, m.scr = d, scrGroups
	m.agg, m.depth, m.complete, m.note, m.warnings, m.readErr = newAggregate(), d.Depth.Ready+d.Depth.Held, false, "", nil, ""
	m.grpCur, m.grpTop, m.marked, m.filter = 0, 0, map[string]bool{}, ""
	m.reading, m.stopping = true, false
	m.readSeq++
	ctx, cancel := context.WithCancel(m.ctx)
	m.cancel = cancel
	ch := make(chan ReadUpdate, 16)
	be, ref := m.be, d.Ref
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer close(ch)
		ended := false
		defer func() {
			// A panic in a read must not leave the terminal raw: it ends
			// the read as an error the screen shows.
			if r := recover(); r != nil && !ended {
				ch <- ReadUpdate{End: true, Err: fmt.Errorf("the read crashed: %v", r)}
			}
		}()
		err := be.Read(ctx, ref, func(u ReadUpdate) {
			ended = ended || u.End
			ch <- u
		})
		if !ended {
			ch <- ReadUpdate{End: true, Err: err}
		}
	}()
	return waitRead(m.readSeq, ch)
}

func (m *Model) stopRead() {
	if m.reading {
		m.stopping = true
	}
	if m.cancel != nil {
		m.cancel()
		m.cancel = nil
	}
}

func (m *Model) groups() []*group {
	if m.agg == nil {
		return nil
	}
	return m.agg.sorted(m.keyIdx)
}

// selection is what an action would act on now.
func (m *Model) selection() (selection, bool) {
	switch {
	case m.filter != "":
		return selection{What: "filter " + m.filter, Args: []string{"--filter", m.filter}}, true
	case len(m.marked) > 0:
		return markedSelection(m.marked), true
	}
	gs := m.groups()
	if m.grpCur >= len(gs) {
		return selection{}, false
	}
	g := gs[m.grpCur]
	if m.scr == scrMessages && m.grp != nil {
		g = m.grp
	}
	return groupSelection(m.keyIdx, g, m.agg.total, m.complete), true
}

func (m *Model) onKey(k tea.KeyPressMsg) tea.Cmd {
	key := k.String()
	if key == "ctrl+c" {
		return m.quit()
	}
	if m.typing != inNone {
		return m.onTyping(k)
	}
	m.status = ""
	if m.help {
		m.help = false
		return nil
	}
	switch key {
	case "?":
		m.help = true
		return nil
	}
	switch m.scr {
	case scrDLQs:
		switch key {
		case "q", "esc":
			return m.quit()
		case "up", "k":
			m.dlqCur = max(0, m.dlqCur-1)
		case "down", "j":
			m.dlqCur = min(len(m.dlqs)-1, m.dlqCur+1)
		case "r":
			m.listing = true
			return m.listCmd()
		case "enter":
			if m.dlqCur < len(m.dlqs) {
				return m.open(m.dlqs[m.dlqCur])
			}
		}
	case scrGroups:
		gs := m.groups()
		switch key {
		case "q":
			return m.quit()
		case "esc":
			if m.filter != "" || len(m.marked) > 0 {
				m.filter, m.marked = "", map[string]bool{}
				return nil
			}
			m.stopRead()
			m.scr = scrDLQs
		case "up", "k":
			m.grpCur = max(0, m.grpCur-1)
		case "down", "j":
			m.grpCur = max(0, min(len(gs)-1, m.grpCur+1))
		case "g", "tab":
			m.keyIdx = (m.keyIdx + 1) % len(GroupKeys)
			m.grpCur, m.grpTop = 0, 0
		case "1", "2", "3", "4", "5", "6":
			m.keyIdx = int(key[0] - '1')
			m.grpCur, m.grpTop = 0, 0
		case "x":
			m.stopRead()
		case "r":
			if m.reading {
				m.status = "still reading: x stops the read first"
				return nil
			}
			return m.open(m.cur)
		case "enter":
			if m.grpCur < len(gs) {
				m.grp, m.msgCur, m.scr = gs[m.grpCur], 0, scrMessages
			}
		default:
			return m.actionKey(key)
		}
	case scrMessages:
		switch key {
		case "q", "esc":
			m.scr = scrGroups
		case "up", "k":
			m.msgCur = max(0, m.msgCur-1)
		case "down", "j":
			m.msgCur = max(0, min(len(m.grp.Items)-1, m.msgCur+1))
		case "space", " ":
			if m.opts.ReadOnly || m.msgCur >= len(m.grp.Items) {
				return nil
			}
			id := m.grp.Items[m.msgCur].Rec.MessageID
			if m.marked[id] {
				delete(m.marked, id)
			} else {
				m.marked[id] = true
			}
			m.msgCur = min(len(m.grp.Items)-1, m.msgCur+1)
		case "enter":
			if m.msgCur < len(m.grp.Items) {
				m.showMessage(&m.grp.Items[m.msgCur].Rec)
			}
		default:
			return m.actionKey(key)
		}
	case scrMessage:
		switch key {
		case "q", "esc":
			m.scr = scrMessages
		default:
			var cmd tea.Cmd
			m.vp, cmd = m.vp.Update(k)
			return cmd
		}
	case scrConfirm:
		switch key {
		case "y":
			return m.startRun()
		case "n", "esc", "q":
			m.pending, m.scr = nil, m.back
		}
	case scrRun:
		if !m.run.done {
			return nil
		}
		switch key {
		case "enter", "esc", "q":
			m.scr = scrGroups
			m.run = nil
		case "r":
			m.run = nil
			return m.open(m.cur)
		}
	}
	return nil
}

// actionKey handles the keys that act on a selection.
func (m *Model) actionKey(key string) tea.Cmd {
	if m.opts.ReadOnly {
		return nil
	}
	var kind actionKind
	switch key {
	case "/":
		m.typing, m.line = inFilter, m.filter
		return nil
	case "t":
		m.typing, m.line = inTo, m.opts.To
		return nil
	case "d":
		kind = actDryRun
	case "c":
		kind = actCanary
	case "R":
		kind = actRedrive
	case "a":
		if m.opts.ArchiveTo == "" {
			m.status = "archive needs 'dlqctl ui --archive-to s3://BUCKET/PREFIX'"
			return nil
		}
		kind = actArchive
	default:
		return nil
	}
	if m.reading {
		m.status = "the read still holds messages: wait for it to end (or x to stop it) before acting"
		return nil
	}
	sel, ok := m.selection()
	if !ok {
		return nil
	}
	a := buildAction(kind, m.cur.Ref, sel, m.opts)
	m.pending, m.back, m.scr, m.status = &a, m.scr, scrConfirm, ""
	return nil
}

func (m *Model) onTyping(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "esc":
		m.typing = inNone
	case "enter":
		switch m.typing {
		case inFilter:
			m.filter = strings.TrimSpace(m.line)
		case inTo:
			m.opts.To = strings.TrimSpace(m.line)
		}
		m.typing = inNone
	case "backspace":
		if r := []rune(m.line); len(r) > 0 {
			m.line = string(r[:len(r)-1])
		}
	default:
		if k.Text != "" {
			m.line += k.Text
		}
	}
	return nil
}

func (m *Model) quit() tea.Cmd {
	m.quitting = true
	m.stopRead()
	if m.run != nil && !m.run.done {
		m.run.cancel() // the child stops cleanly (SIGINT) and reports
		return nil
	}
	return tea.Quit
}

func (m *Model) showMessage(rec *record.Record) {
	d := m.be.Describe(rec)
	var b strings.Builder
	fmt.Fprintf(&b, "message %s\n", rec.MessageID)
	fmt.Fprintf(&b, "age %s · received %d time(s) · %d bytes\n", dur(time.Duration(rec.AgeSeconds)*time.Second), rec.System.ReceiveCount, rec.SizeBytes)
	if d.Origin != "" {
		fmt.Fprintf(&b, "redrive --to source sends it to: %s\n", d.Origin)
	}
	b.WriteString("\n── body ──\n")
	b.WriteString(d.Body)
	if len(rec.Attributes) > 0 {
		b.WriteString("\n\n── attributes / headers ──\n")
		for _, k := range sortedKeys(rec.Attributes) {
			a := rec.Attributes[k]
			v := a.Value
			if a.IsBinary() {
				v = "(binary) " + a.Base64
			}
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	b.WriteString("\n── classification ──\n")
	b.WriteString(d.Explain)
	m.vp.SetContent(b.String())
	m.vp.GotoTop()
	m.sizeViewport()
	m.scr = scrMessage
}

func (m *Model) sizeViewport() {
	m.vp.SetWidth(m.w)
	m.vp.SetHeight(max(1, m.h-2))
}

func (m *Model) startRun() tea.Cmd {
	a := *m.pending
	m.pending = nil
	ctx, cancel := context.WithCancel(m.ctx)
	m.run = &runState{act: a, cancel: cancel}
	m.scr = scrRun
	ch := make(chan any, 64)
	be := m.be
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer close(ch)
		res := RunResult{Code: -1}
		defer func() {
			if r := recover(); r != nil {
				res.Err = fmt.Errorf("running the command crashed: %v", r)
			}
			ch <- runDoneMsg{res}
		}()
		res = be.Run(ctx, a.Args, func(ev RunEvent) { ch <- ev })
	}()
	return waitRun(ch)
}

func waitRun(ch <-chan any) tea.Cmd {
	return func() tea.Msg {
		v, ok := <-ch
		if !ok {
			return nil
		}
		switch v := v.(type) {
		case RunEvent:
			return runEventMsg{v, ch}
		case runDoneMsg:
			return v
		}
		return nil
	}
}

func (m *Model) onRunEvent(ev RunEvent) {
	switch ev.Type {
	case "progress":
		m.run.progress = ev.Fields
	case "guard", "message":
		if ev.Type == "message" {
			if a, _ := ev.Fields["action"].(string); a == "moved" || a == "would-move" || a == "archived" {
				return // counted by progress; only the unusual ones are listed
			}
		}
		m.run.events = append(m.run.events, oneLine(ev.Fields))
		if len(m.run.events) > 50 {
			m.run.events = m.run.events[len(m.run.events)-50:]
		}
	}
}

func oneLine(f map[string]any) string {
	var parts []string
	for _, k := range sortedKeys(f) {
		if k == "type" {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%v", k, f[k]))
	}
	return strings.Join(parts, " ")
}

// ---- rendering ----------------------------------------------------------

type styles struct {
	title, header, sel, dim, warn, bad, good lipgloss.Style
}

func newStyles(noColor bool) styles {
	if noColor {
		p := lipgloss.NewStyle()
		return styles{p, p, p, p, p, p, p}
	}
	return styles{
		title:  lipgloss.NewStyle().Bold(true),
		header: lipgloss.NewStyle().Bold(true).Underline(true),
		sel:    lipgloss.NewStyle().Reverse(true),
		dim:    lipgloss.NewStyle().Faint(true),
		warn:   lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
		bad:    lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true),
		good:   lipgloss.NewStyle().Foreground(lipgloss.Color("2")).Bold(true),
	}
}

// View draws the screen.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "dlqctl ui"
	return v
}

// Render is the frame as text, exactly w×h cells (lines padded or cut).
func (m *Model) Render() string {
	var body []string
	var title, footer string
	switch {
	case m.help:
		title, body, footer = "dlqctl ui · keys", m.helpLines(), "any key: back"
	case m.scr == scrDLQs:
		title, body, footer = m.viewDLQs()
	case m.scr == scrGroups:
		title, body, footer = m.viewGroups()
	case m.scr == scrMessages:
		title, body, footer = m.viewMessages()
	case m.scr == scrMessage:
		title, footer = "dlqctl ui · "+m.cur.Name+" · message", "↑/↓ pgup/pgdn scroll · esc back · ? keys"
		body = strings.Split(m.vp.View(), "\n")
	case m.scr == scrConfirm:
		title, body, footer = m.viewConfirm()
	case m.scr == scrRun:
		title, body, footer = m.viewRun()
	}
	if m.typing != inNone {
		what := "filter (jq, over the message record)"
		if m.typing == inTo {
			what = "destination (source, or a queue name/URL/ARN)"
		}
		footer = what + ": " + m.line + "█"
	} else if m.status != "" {
		footer = m.status + " · " + footer
	}
	lines := make([]string, 0, m.h)
	lines = append(lines, m.st.title.Render(m.fit(title)))
	room := m.h - 2
	for i := 0; i < room; i++ {
		l := ""
		if i < len(body) {
			l = body[i]
		}
		lines = append(lines, l)
	}
	lines = append(lines, m.st.dim.Render(m.fit(footer)))
	return strings.Join(lines, "\n")
}

// fit cuts s to the width (with … when cut) and pads it.
func (m *Model) fit(s string) string {
	s = ansi.Truncate(s, m.w, "…")
	if n := ansi.StringWidth(s); n < m.w {
		s += strings.Repeat(" ", m.w-n)
	}
	return s
}

// row fits a table row; the row at the cursor is marked with > (and shown
// reversed with colour).
func (m *Model) row(s string, selected bool) string {
	if selected {
		return m.st.sel.Render(m.fit("> " + s))
	}
	return m.fit("  " + s)
}

func col(s string, w int) string {
	s = ansi.Truncate(strings.ReplaceAll(s, "\n", " "), w, "…")
	if n := ansi.StringWidth(s); n < w {
		s += strings.Repeat(" ", w-n)
	}
	return s
}

func rcol(s string, w int) string {
	if n := ansi.StringWidth(s); n < w {
		return strings.Repeat(" ", w-n) + s
	}
	return s
}

func (m *Model) viewDLQs() (string, []string, string) {
	title := "dlqctl ui · dead-letter queues"
	footer := "↑/↓ move · enter open · r refresh · ? keys · q quit"
	if m.opts.ReadOnly {
		title += " · read-only"
	}
	var out []string
	switch {
	case m.listing && len(m.dlqs) == 0:
		return title, []string{"  listing dead-letter queues…"}, footer
	case m.listErr != "":
		return title, []string{"  " + m.st.bad.Render("cannot list the dead-letter queues:"), "  " + m.listErr}, footer
	case len(m.dlqs) == 0:
		return title, []string{"  no dead-letter queues found; pass one: dlqctl ui QUEUE"}, footer
	}
	nameW := max(16, (m.w-2-9-10-8-13)/2)
	if m.w >= 120 {
		nameW = 40
	}
	warnW := max(0, m.w-2-nameW-9-10-8-13)
	out = append(out, m.st.header.Render(m.fit("  "+col("NAME", nameW)+col("BROKER", 9)+rcol("DEPTH", 9)+" "+rcol("OLDEST", 7)+" "+col("GROWTH", 13)+col("WARNINGS", warnW))))
	for i, d := range m.dlqs {
		depth := "?"
		if d.Err == "" {
			depth = fmt.Sprint(d.Depth.Ready + d.Depth.Held)
			if !d.Depth.Exact {
				depth = "~" + depth
			}
		}
		oldest := "-"
		if d.Depth.OldestKnown {
			oldest = dur(d.Depth.Oldest)
		}
		warn := strings.Join(d.Warnings, "; ")
		if d.Err != "" {
			warn = d.Err
		}
		s := col(d.Name, nameW) + col(d.Broker, 9) + rcol(depth, 9) + " " + rcol(oldest, 7) + " " + col(spark(m.history[d.Ref], 12), 13) + col(warn, warnW)
		out = append(out, m.row(s, i == m.dlqCur))
	}
	out = append(out, "")
	note := "  growth: the depth since the UI opened"
	for _, d := range m.dlqs {
		if d.Err == "" && !d.Depth.Exact {
			note = "  ~ approximate (SQS counts trail by up to a minute) · growth: since the UI opened"
			break
		}
	}
	out = append(out, m.st.dim.Render(m.fit(note)))
	return title, out, footer
}

// spark is a sparkline of the last n readings.
func spark(h []int64, n int) string {
	if len(h) == 0 {
		return ""
	}
	if len(h) > n {
		h = h[len(h)-n:]
	}
	lo, hi := h[0], h[0]
	for _, v := range h {
		lo, hi = min(lo, v), max(hi, v)
	}
	bars := []rune("▁▂▃▄▅▆▇█")
	var b strings.Builder
	for _, v := range h {
		i := 0
		if hi > lo {
			i = int((v - lo) * int64(len(bars)-1) / (hi - lo))
		}
		b.WriteRune(bars[i])
	}
	return b.String()
}

func (m *Model) readLine() string {
	read := 0
	if m.agg != nil {
		read = m.agg.total
	}
	s := fmt.Sprintf("read %d", read)
	switch {
	case m.complete:
		s = fmt.Sprintf("read all %d", read)
	case m.depth > 0:
		s = fmt.Sprintf("read %d of ~%d", read, m.depth)
	}
	switch {
	case m.reading && m.stopping:
		s += " · stopping: releasing the messages the read holds…"
	case m.reading:
		s += " · reading… (x stops)"
	case m.readErr != "":
		s += " · read failed: " + m.readErr
	case !m.complete && m.note != "":
		s += " · " + m.note
	case !m.complete:
		s += " · a sample (counts are of what was read)"
	}
	return s
}

func (m *Model) viewGroups() (string, []string, string) {
	key := GroupKeys[m.keyIdx].Name
	title := fmt.Sprintf("dlqctl ui · %s · by %s", m.cur.Name, key)
	var keys []string
	for i, k := range GroupKeys {
		n := fmt.Sprintf("%d %s", i+1, k.Name)
		if i == m.keyIdx {
			n = "[" + n + "]"
		}
		keys = append(keys, n)
	}
	out := []string{m.fit("  " + m.readLine()), m.fit("  group by: " + strings.Join(keys, "  ") + "  (g)")}
	for _, w := range m.warnings {
		out = append(out, m.st.warn.Render(m.fit("  ! "+w)))
	}
	valW := max(10, m.w-2-7-7-8-8)
	out = append(out, m.st.header.Render(m.fit("  "+rcol("COUNT", 6)+" "+rcol("SHARE", 6)+" "+rcol("OLDEST", 7)+" "+rcol("NEWEST", 7)+" "+col(strings.ToUpper(key), valW))))
	gs := m.groups()
	total := 0
	if m.agg != nil {
		total = m.agg.total
	}
	now := m.opts.Now()
	// Rows left for groups: the frame minus title, footer, the lines above
	// and three below.
	room := max(1, m.h-2-len(out)-3)
	if m.grpCur < m.grpTop {
		m.grpTop = m.grpCur
	}
	if m.grpCur >= m.grpTop+room {
		m.grpTop = m.grpCur - room + 1
	}
	for i := m.grpTop; i < len(gs) && i < m.grpTop+room; i++ {
		g := gs[i]
		share := 0.0
		if total > 0 {
			share = 100 * float64(g.Count) / float64(total)
		}
		s := rcol(fmt.Sprint(g.Count), 6) + " " + rcol(fmt.Sprintf("%.1f%%", share), 6) + " " + rcol(ageOf(now, g.First), 7) + " " + rcol(ageOf(now, g.Last), 7) + " " + col(g.Value, valW)
		out = append(out, m.row(s, i == m.grpCur))
	}
	if len(gs) == 0 && !m.reading {
		out = append(out, "  no messages")
	}
	for len(out) < m.h-2-2 {
		out = append(out, "")
	}
	if sel, ok := m.selection(); ok && !m.opts.ReadOnly {
		out = append(out, m.fit("  selection: "+sel.What))
	}
	footer := "enter messages · g key · r re-read · esc back · ? keys"
	if !m.opts.ReadOnly {
		footer = "enter msgs · g key · d dry-run · c canary · R redrive · / filter · ? keys"
	}
	return title, out, footer
}

func (m *Model) viewMessages() (string, []string, string) {
	g := m.grp
	title := fmt.Sprintf("dlqctl ui · %s · %s = %s · showing %d of %d read", m.cur.Name, GroupKeys[m.keyIdx].Name, g.Value, len(g.Items), g.Count)
	idW := 14
	if m.w >= 120 {
		idW = 38
	}
	errW := max(10, m.w-2-4-idW-6-5-22)
	out := []string{m.st.header.Render(m.fit("  " + "    " + col("ID", idW) + rcol("AGE", 5) + " " + rcol("RECV", 4) + " " + col("SOURCE · EVENT", 21) + " " + col("ERROR", errW)))}
	room := m.h - 2 - 1 - 2
	top := max(0, m.msgCur-room+1)
	for i := top; i < len(g.Items) && i < top+room; i++ {
		r := &g.Items[i].Rec
		mark := "[ ] "
		if m.marked[r.MessageID] {
			mark = "[x] "
		}
		if m.opts.ReadOnly {
			mark = "    "
		}
		ev := r.SourceQueue()
		if r.Envelope != nil && r.Envelope.EventType != "" {
			ev += " · " + r.Envelope.EventType
		}
		errText := ""
		if r.Failure != nil {
			errText = r.Failure.Reason
			if errText == "" {
				errText = r.Failure.Type
			}
		}
		if errText == "" {
			errText = r.Body
		}
		s := mark + col(r.MessageID, idW) + rcol(dur(time.Duration(r.AgeSeconds)*time.Second), 5) + " " + rcol(fmt.Sprint(r.System.ReceiveCount), 4) + " " + col(ev, 21) + " " + col(errText, errW)
		out = append(out, m.row(s, i == m.msgCur))
	}
	for len(out) < m.h-2-1 {
		out = append(out, "")
	}
	if sel, ok := m.selection(); ok && !m.opts.ReadOnly {
		out = append(out, m.fit("  selection: "+sel.What))
	}
	footer := "enter open · esc back · ? keys"
	if !m.opts.ReadOnly {
		footer = "enter open · space mark · d dry-run · c canary · R redrive · esc back · ? keys"
	}
	return title, out, footer
}

func (m *Model) viewConfirm() (string, []string, string) {
	a := m.pending
	title := fmt.Sprintf("dlqctl ui · %s · %s", m.cur.Name, a.Kind)
	out := []string{"", m.fit(fmt.Sprintf("  %s of %s on %s", a.Kind, m.cur.Name, a.Sel.What))}
	if a.Sel.N > 0 {
		out = append(out, m.fit(fmt.Sprintf("  selected: %d message(s) of those read", a.Sel.N)))
	}
	if a.Sel.Partial {
		out = append(out, m.st.warn.Render(m.fit(fmt.Sprintf("  ! selected by id: %d of the %d read in this group; messages not read are not selected", a.Sel.N, a.Sel.Of))))
	}
	out = append(out, "", m.fit("  This runs, as a child process of this binary:"), "")
	for _, l := range wrap(displayLine(a.Args, 6), m.w-4) {
		out = append(out, "    "+l)
	}
	out = append(out, "", m.fit("  It leaves the usual journal ('dlqctl runs', 'dlqctl redrive resume')."))
	if a.Kind != actDryRun {
		out = append(out, m.st.warn.Render(m.fit("  This changes the queues.")))
	}
	return title, out, "y run · n cancel"
}

// displayLine is the command line with long id lists shortened to keep
// the first keep ids (the session log printed on exit has the whole line).
func displayLine(args []string, keep int) string {
	shown := make([]string, len(args))
	for i, a := range args {
		if strings.HasPrefix(a, ".message_id | IN(") {
			ids := strings.Split(strings.TrimSuffix(strings.TrimPrefix(a, ".message_id | IN("), ")"), ", ")
			if len(ids) > keep {
				a = ".message_id | IN(" + strings.Join(ids[:keep], ", ") + fmt.Sprintf(", … %d more)", len(ids)-keep)
			}
		}
		shown[i] = a
	}
	return CommandLine(shown)
}

// wrap breaks s into lines of at most w cells.
func wrap(s string, w int) []string {
	var out []string
	for ansi.StringWidth(s) > w && w > 0 {
		cut := ansi.Truncate(s, w, "")
		if i := strings.LastIndex(cut, " "); i > w/2 {
			cut = cut[:i+1]
		}
		out = append(out, cut)
		s = s[len(cut):]
	}
	return append(out, s)
}

func (m *Model) viewRun() (string, []string, string) {
	r := m.run
	title := fmt.Sprintf("dlqctl ui · %s · %s", m.cur.Name, r.act.Kind)
	out := []string{""}
	for _, l := range wrap(displayLine(r.act.Args, 3), m.w-4) {
		out = append(out, "  "+m.st.dim.Render(l))
	}
	out = append(out, "")
	if p := r.progress; p != nil {
		s := fmt.Sprintf("  %v: %v done", p["op"], p["done"])
		if t, ok := p["total"]; ok {
			s += fmt.Sprintf(" of %v", t)
		}
		s += fmt.Sprintf(" · %v skipped · %v failed", p["skipped"], p["failed"])
		if rt, ok := p["rate"].(float64); ok {
			s += fmt.Sprintf(" · %.0f/s", rt)
		}
		out = append(out, m.fit(s))
	} else if !r.done {
		out = append(out, m.fit("  running…"))
	}
	for _, e := range r.events[max(0, len(r.events)-5):] {
		out = append(out, m.fit("  "+e))
	}
	footer := "running · ctrl+c stops it cleanly"
	if r.done {
		out = append(out, "")
		out = append(out, m.resultLines()...)
		footer = "enter back · r re-read the DLQ · ? keys"
	}
	return title, out, footer
}

func (m *Model) resultLines() []string {
	res := m.run.res
	verdict := map[int]string{0: "ok", 1: "error", 2: "bad input, nothing changed", 3: "verdict failed", 4: "partial", 130: "interrupted"}[res.Code]
	style := m.st.good
	if res.Code != 0 {
		style = m.st.bad
	}
	out := []string{style.Render(m.fit(fmt.Sprintf("  exit %d: %s", res.Code, verdict)))}
	if s := res.Summary; s != nil {
		var parts []string
		for _, k := range []string{"status", "run_id", "matched", "moved", "would_move", "archived", "skipped", "failed", "deleted"} {
			if v, ok := s[k]; ok {
				parts = append(parts, fmt.Sprintf("%s %v", strings.ReplaceAll(k, "_", " "), v))
			}
		}
		if c, ok := s["canary"].(map[string]any); ok {
			pass := "FAIL"
			if c["pass"] == true {
				pass = "PASS"
			}
			parts = append(parts, fmt.Sprintf("canary %s (returned %v)", pass, c["returned"]))
		}
		for _, l := range wrap(strings.Join(parts, " · "), m.w-4) {
			out = append(out, m.fit("  "+l))
		}
	}
	if res.Err != nil {
		out = append(out, m.fit("  "+res.Err.Error()))
	}
	lines := strings.Split(strings.TrimSpace(res.Stderr), "\n")
	for _, l := range lines[max(0, len(lines)-6):] {
		if l != "" {
			out = append(out, m.st.dim.Render(m.fit("  "+l)))
		}
	}
	return out
}

func (m *Model) helpLines() []string {
	l := []string{
		"  everywhere  ? keys · ctrl+c quit (what the read holds is released)",
		"  DLQs        ↑/↓ j/k move · enter open (read, nothing consumed)",
		"              r refresh · q quit",
		"  groups      g/tab next key · 1-6 error class source type encoding tenant",
		"              enter messages · x stop reading · r read again · esc back",
		"  messages    enter open one · esc back",
		"  message     ↑/↓ pgup/pgdn scroll · esc back",
	}
	if m.opts.ReadOnly {
		l = append(l, "", "  read-only: no action keys (dlqctl ui --read-only)")
	} else {
		l = append(l,
			"",
			"  actions on the group at the cursor, the marked messages or a filter:",
			"              space mark a message · / type a filter · esc clear them",
			"              t destination (source or a queue) · d dry run · c canary",
			"              R redrive · a archive (with --archive-to)",
			"  each shows its dlqctl command line, asks, then runs it as a child",
			"  process: the same journal as from a shell ('dlqctl runs').",
		)
	}
	for i := range l {
		l[i] = m.fit(l[i])
	}
	return l
}

// ---- helpers ----------------------------------------------------------

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func ageOf(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return dur(now.Sub(t))
}

// dur is a short duration: 45s, 12m, 3h, 4d.
func dur(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
