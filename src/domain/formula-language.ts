import { characters } from '../core/characters.ts';

/**
 * The formula language: an expression over a record's fields, read into a typed tree once, when a
 * definition is saved, so each record only walks the tree (formula-eval.ts).
 */

/** What a formula field yields. */
export type ResultType = 'number' | 'text' | 'boolean' | 'date' | 'datetime';
export const RESULT_TYPES: readonly ResultType[] = ['number', 'text', 'boolean', 'date', 'datetime'];
/** The type of an expression: a result type, or `null` for NULL, which fits every type. */
export type ExprType = ResultType | 'null';

export const MAX_EXPRESSION = 2000;
/** Levels of parentheses, function calls and prefix operators an expression may nest. */
export const MAX_DEPTH = 32;

export type Unit = 'days' | 'weeks' | 'months' | 'years' | 'hours' | 'minutes' | 'seconds';
const UNITS: readonly Unit[] = ['days', 'weeks', 'months', 'years', 'hours', 'minutes', 'seconds'];
const TIME_UNITS: readonly Unit[] = ['hours', 'minutes', 'seconds'];

export type Operator = 'OR' | 'AND' | '=' | '!=' | '<' | '<=' | '>' | '>=' | '&' | '+' | '-' | '*' | '/' | '%';

/** Where a field reference reads: a stored value, another formula's value, or a record's own time. */
export type Source = 'value' | 'formula' | 'createdAt' | 'updatedAt';

/**
 * A node of a formula; `position` is where its head is in the expression (a literal's or a
 * reference's start, an operator, a function's name) and `type` is set by the type check.
 */
export type Expr =
  | { kind: 'value'; position: number; type: ExprType; value: number | string | boolean | null }
  | { kind: 'field'; position: number; type: ExprType; name: string; source: Source }
  | { kind: 'not' | 'negate'; position: number; type: ExprType; arg: Expr }
  | { kind: 'binary'; position: number; type: ExprType; op: Operator; left: Expr; right: Expr }
  | { kind: 'call'; position: number; type: ExprType; name: string; args: Expr[]; unit: Unit | null };

/** The fields of a definition as the compiler needs them (a FieldDefinition has more properties). */
export interface FieldLike {
  name: string;
  type: string;
  expression?: string;
  resultType?: string;
}

export type FormulaProblemCode =
  'syntax' | 'unknown_field' | 'unknown_function' | 'arity' | 'type' | 'cycle' | 'too_long' | 'too_deep' | 'not_usable';

/** What is wrong with the formula of `fields[field]`, at a 0-based offset in its expression. */
export interface FormulaProblem {
  field: number;
  position: number;
  code: FormulaProblemCode;
  message: string;
}

/** A formula ready to evaluate: `inputs` are the names it reads directly. */
export interface Compiled {
  name: string;
  resultType: ResultType;
  inputs: string[];
  expr: Expr;
}

/** The types formulas can read, by field type; a field of any other type is not usable. */
const FIELD_TYPES: ReadonlyMap<string, ResultType> = new Map([
  ['number', 'number'],
  ['integer', 'number'],
  ['text', 'text'],
  ['select', 'text'],
  ['email', 'text'],
  ['url', 'text'],
  ['boolean', 'boolean'],
  ['date', 'date'],
  ['datetime', 'datetime'],
]);

export const isResultType = (value: unknown): value is ResultType => RESULT_TYPES.includes(value as ResultType);

/** Every formula field of `fields`, type-checked, each after the formulas it reads; or every problem. */
export function compileFormulas(
  fields: readonly FieldLike[],
): { ok: true; formulas: Compiled[] } | { ok: false; problems: FormulaProblem[] } {
  const byName = new Map<string, number>();
  fields.forEach((field, i) => {
    if (!byName.has(field.name)) byName.set(field.name, i);
  });
  const problems: FormulaProblem[] = [];
  const read: { field: number; compiled: Compiled; reads: ReadonlyMap<number, number> }[] = [];
  fields.forEach((field, i) => {
    if (field.type !== 'formula') return;
    const report = (position: number, code: FormulaProblemCode, message: string): void => {
      problems.push({ field: i, position, code, message });
    };
    const resultType = isResultType(field.resultType) ? field.resultType : undefined;
    if (resultType === undefined) report(0, 'type', `a formula needs a resultType: ${RESULT_TYPES.join(', ')}`);
    const source = typeof field.expression === 'string' ? field.expression : '';
    if (source.length > MAX_EXPRESSION && characters(source) > MAX_EXPRESSION) {
      // Counted in characters (a surrogate pair is one); the position, as every position, in UTF-16 units.
      report(beyond(source, MAX_EXPRESSION), 'too_long', `a formula takes at most ${MAX_EXPRESSION} characters`);
      return;
    }
    const expr = parse(source);
    if (expr instanceof Stop) return report(expr.position, expr.code, expr.message);
    const checker = new Checker(fields, byName, report);
    const type = checker.check(expr);
    if (resultType !== undefined && type !== 'null' && type !== resultType)
      report(expr.position, 'type', `expected ${typeName(resultType)}, got ${typeName(type)}`);
    const compiled = { name: field.name, resultType: resultType ?? 'text', inputs: [...checker.inputs], expr };
    read.push({ field: i, compiled, reads: checker.reads });
  });
  const node = new Map(read.map((entry, i) => [entry.field, i]));
  const graph = components(read.map((entry) => [...entry.reads.keys()].flatMap((field) => node.get(field) ?? [])));
  read.forEach((entry, i) => {
    if (!graph.cyclic[i]) return;
    const same = [...entry.reads].filter(([field]) => graph.component[node.get(field) ?? -1] === graph.component[i]);
    problems.push({
      field: entry.field,
      position: Math.min(...same.map(([, position]) => position)),
      code: 'cycle',
      message: 'the formula reads itself, directly or through other formulas',
    });
  });
  if (problems.length > 0)
    return { ok: false, problems: problems.sort((a, b) => a.field - b.field || a.position - b.position) };
  return { ok: true, formulas: graph.order.flatMap((i) => read[i]?.compiled ?? []) };
}

/**
 * The strongly connected components of a graph given as edges per node (Tarjan's algorithm, with
 * an explicit stack so that no chain of formulas is too long for the call stack). `order` lists
 * every node after the nodes it reaches, when there is no cycle; `cyclic` marks each node on one.
 */
function components(edges: readonly (readonly number[])[]): {
  order: number[];
  component: number[];
  cyclic: boolean[];
} {
  const index: number[] = edges.map(() => -1);
  const low: number[] = edges.map(() => 0);
  const component: number[] = edges.map(() => -1);
  const cyclic: boolean[] = edges.map((out, v) => out.includes(v));
  const order: number[] = [];
  const stack: number[] = [];
  let counter = 0;
  const visit = (v: number): void => {
    index[v] = low[v] = counter++;
    stack.push(v);
  };
  for (let root = 0; root < edges.length; root++) {
    if (index[root] !== -1) continue;
    visit(root);
    const work: [number, number][] = [[root, 0]];
    while (work.length > 0) {
      const top = work[work.length - 1] as [number, number];
      const [v, next] = top;
      const w = edges[v]?.[next];
      if (w !== undefined) {
        top[1]++;
        if (index[w] === -1) {
          visit(w);
          work.push([w, 0]);
        } else if (component[w] === -1) low[v] = Math.min(low[v] ?? 0, index[w] ?? 0);
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent !== undefined) low[parent[0]] = Math.min(low[parent[0]] ?? 0, low[v] ?? 0);
      if (low[v] !== index[v]) continue;
      const members: number[] = [];
      let u: number | undefined;
      do {
        u = stack.pop() as number;
        component[u] = v;
        members.push(u);
        order.push(u);
      } while (u !== v);
      if (members.length > 1) for (const member of members) cyclic[member] = true;
    }
  }
  return { order, component, cyclic };
}

/** Why an expression cannot be read; the reader stops at the first. */
class Stop {
  constructor(
    readonly position: number,
    readonly code: 'syntax' | 'too_deep',
    readonly message: string,
  ) {}
}

interface Token {
  kind: 'number' | 'text' | 'field' | 'name' | 'symbol' | 'end';
  position: number;
  /** The token as written; for a text, its content; for a field, its name. */
  text: string;
}

/** White space, a number, a name or an operator: whichever starts at `lastIndex`, by its group. */
const TOKEN =
  /(\s+)|((?:\d+(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?)|([A-Za-z_][A-Za-z0-9_]*)|(<=|>=|<>|!=|[=<>&+\-*/%(),])/y;
const ESCAPED = ['"', "'", '\\'];

/** The tokens of `source`, ending with an `end` token; a character no token starts with stops it. */
function tokenize(source: string): Token[] | Stop {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source.charAt(i);
    const position = i;
    if (c === '"' || c === "'") {
      const text = quoted(source, i);
      if (text instanceof Stop) return text;
      tokens.push({ kind: 'text', position, text: text.text });
      i = text.end;
    } else if (c === '{') {
      const end = source.indexOf('}', i + 1);
      if (end === -1) return new Stop(position, 'syntax', `unterminated field name at ${position}`);
      tokens.push({ kind: 'field', position, text: source.slice(i + 1, end) });
      i = end + 1;
    } else {
      TOKEN.lastIndex = i;
      const match = TOKEN.exec(source);
      if (match === null) return new Stop(position, 'syntax', `unexpected character at ${position}`);
      const kind = match[2] !== undefined ? 'number' : match[3] !== undefined ? 'name' : 'symbol';
      if (match[1] === undefined) tokens.push({ kind, position, text: match[0] });
      i += match[0].length;
    }
  }
  tokens.push({ kind: 'end', position: source.length, text: '' });
  return tokens;
}

/** The content of the quoted text at `start`, and where it ends; `\"`, `\'` and `\\` escape. */
function quoted(source: string, start: number): { text: string; end: number } | Stop {
  const quote = source.charAt(start);
  let text = '';
  let from = start + 1;
  for (let i = from; i < source.length; i++) {
    const c = source.charAt(i);
    if (c === quote) return { text: text + source.slice(from, i), end: i + 1 };
    if (c !== '\\') continue;
    if (!ESCAPED.includes(source.charAt(i + 1))) return new Stop(i, 'syntax', `expected \\", \\' or \\\\ at ${i}`);
    text += source.slice(from, i) + source.charAt(i + 1);
    from = ++i + 1;
  }
  return new Stop(start, 'syntax', `unterminated text at ${start}`);
}

/** The tree of `source`, untyped yet; or why it cannot be read. */
function parse(source: string): Expr | Stop {
  const tokens = tokenize(source);
  if (tokens instanceof Stop) return tokens;
  try {
    const parser = new Parser(tokens);
    const expr = parser.or();
    parser.end();
    return expr;
  } catch (error) {
    if (error instanceof Stop) return error;
    throw error;
  }
}

const COMPARISONS = ['=', '!=', '<>', '<', '<=', '>', '>='];
const ADDITIVE = ['+', '-'];
const MULTIPLICATIVE = ['*', '/', '%'];
const CONCAT = ['&'];
const CLOSE = [')'];
const COMMA = [','];
const KEYWORDS: ReadonlySet<string> = new Set(['AND', 'OR', 'NOT', 'TRUE', 'FALSE', 'NULL']);

/**
 * A recursive descent over the tokens, one method a precedence level, lowest first. A Stop is
 * thrown from any depth and caught by `parse`: the first syntax problem ends the reading.
 */
class Parser {
  private at = 0;
  private depth = 0;

  constructor(private readonly tokens: readonly Token[]) {}

  or(): Expr {
    let left = this.and();
    for (let op = this.keyword('OR'); op; op = this.keyword('OR')) left = binary(op, left, this.and());
    return left;
  }

  end(): void {
    if (this.peek().kind !== 'end') throw this.unexpected();
  }

  private and(): Expr {
    let left = this.not();
    for (let op = this.keyword('AND'); op; op = this.keyword('AND')) left = binary(op, left, this.not());
    return left;
  }

  private not(): Expr {
    const { kind, text } = this.peek();
    if (kind !== 'name' || text.toUpperCase() !== 'NOT') return this.comparison();
    const position = this.enter();
    const arg = this.not();
    this.depth--;
    return { kind: 'not', position, type: 'null', arg };
  }

  /** Comparisons do not chain: `a < b < c` is a syntax problem at the second operator. */
  private comparison(): Expr {
    const left = this.concat();
    const op = this.symbol(COMPARISONS);
    if (op === undefined) return left;
    const expr = binary(op, left, this.concat());
    if (this.symbol(COMPARISONS)) {
      this.at--;
      throw this.unexpected();
    }
    return expr;
  }

  private concat(): Expr {
    let left = this.additive();
    for (let op = this.symbol(CONCAT); op; op = this.symbol(CONCAT)) left = binary(op, left, this.additive());
    return left;
  }

  private additive(): Expr {
    let left = this.multiplicative();
    for (let op = this.symbol(ADDITIVE); op; op = this.symbol(ADDITIVE)) left = binary(op, left, this.multiplicative());
    return left;
  }

  private multiplicative(): Expr {
    let left = this.unary();
    for (let op = this.symbol(MULTIPLICATIVE); op; op = this.symbol(MULTIPLICATIVE))
      left = binary(op, left, this.unary());
    return left;
  }

  private unary(): Expr {
    const { kind, text } = this.peek();
    if (kind !== 'symbol' || text !== '-') return this.primary();
    const position = this.enter();
    const arg = this.unary();
    this.depth--;
    return { kind: 'negate', position, type: 'null', arg };
  }

  private primary(): Expr {
    const token = this.peek();
    const { position } = token;
    switch (token.kind) {
      case 'number': {
        this.at++;
        const value = Number(token.text);
        if (!Number.isFinite(value)) throw new Stop(position, 'syntax', `number out of range at ${position}`);
        return { kind: 'value', position, type: 'number', value };
      }
      case 'text':
        this.at++;
        return { kind: 'value', position, type: 'text', value: token.text };
      case 'field':
        this.at++;
        return { kind: 'field', position, type: 'null', name: token.text, source: 'value' };
      case 'name':
        return this.name(token);
      case 'symbol': {
        if (token.text !== '(') throw this.unexpected();
        this.enter();
        const expr = this.or();
        this.expect(')', 'expected ")"');
        this.depth--;
        return expr;
      }
      case 'end':
        throw new Stop(position, 'syntax', `expected an expression at ${position}`);
    }
  }

  /** A keyword, a function call (a name before `(`), or else a field named as written. */
  private name(token: Token): Expr {
    const { position } = token;
    const upper = token.text.toUpperCase();
    if (upper === 'TRUE' || upper === 'FALSE' || upper === 'NULL') {
      this.at++;
      const value = upper === 'NULL' ? null : upper === 'TRUE';
      return { kind: 'value', position, type: value === null ? 'null' : 'boolean', value };
    }
    if (KEYWORDS.has(upper)) throw this.unexpected();
    const next = this.tokens[this.at + 1];
    if (next?.kind !== 'symbol' || next.text !== '(') {
      this.at++;
      return { kind: 'field', position, type: 'null', name: token.text, source: 'value' };
    }
    this.enter();
    this.at++;
    const args: Expr[] = [];
    if (!this.symbol(CLOSE)) {
      do args.push(this.or());
      while (this.symbol(COMMA));
      this.expect(')', 'expected "," or ")"');
    }
    this.depth--;
    return { kind: 'call', position, type: 'null', name: upper, args, unit: null };
  }

  /** Takes the current token as one more level of nesting, and answers its position. */
  private enter(): number {
    const { position } = this.peek();
    if (++this.depth > MAX_DEPTH)
      throw new Stop(
        position,
        'too_deep',
        `a formula nests at most ${MAX_DEPTH} levels; level ${this.depth} at ${position}`,
      );
    this.at++;
    return position;
  }

  private expect(symbol: string, message: string): void {
    if (!this.symbol([symbol])) throw new Stop(this.peek().position, 'syntax', `${message} at ${this.peek().position}`);
  }

  /** Takes the current token when it is one of `symbols`. */
  private symbol(symbols: readonly string[]): Token | undefined {
    const token = this.peek();
    if (token.kind !== 'symbol' || !symbols.includes(token.text)) return undefined;
    this.at++;
    return token;
  }

  private keyword(keyword: string): Token | undefined {
    const token = this.peek();
    if (token.kind !== 'name' || token.text.toUpperCase() !== keyword) return undefined;
    this.at++;
    return token;
  }

  private peek(): Token {
    return this.tokens[this.at] ?? (this.tokens[this.tokens.length - 1] as Token);
  }

  private unexpected(): Stop {
    const { kind, position, text } = this.peek();
    const what = kind === 'symbol' ? `"${text}"` : kind === 'name' ? text : kind;
    return new Stop(position, 'syntax', `unexpected ${what} at ${position}`);
  }
}

const binary = (op: Token, left: Expr, right: Expr): Expr => ({
  kind: 'binary',
  position: op.position,
  type: 'null',
  op: op.text === '<>' ? '!=' : (op.text as Operator),
  left,
  right,
});

type Report = (position: number, code: FormulaProblemCode, message: string) => void;

const NUMBER_ONLY: readonly ExprType[] = ['number'];
const TEXT_ONLY: readonly ExprType[] = ['text'];
const BOOLEAN_ONLY: readonly ExprType[] = ['boolean'];
const DATES: readonly ExprType[] = ['date', 'datetime'];
const ORDERED: readonly ExprType[] = ['number', 'date', 'datetime'];

const ARTICLES: Record<ExprType, string> = {
  number: 'a number',
  text: 'text',
  boolean: 'a boolean',
  date: 'a date',
  datetime: 'a datetime',
  null: 'NULL',
};
const typeName = (type: ExprType): string => ARTICLES[type];
const either = (types: readonly ExprType[]): string =>
  types
    .map(typeName)
    .join(', ')
    .replace(/, ([^,]*)$/, ' or $1');

/**
 * Types a tree in place and reports what does not fit. A node in error takes the type `null`,
 * which fits everywhere, so one mistake is reported once and not again by every node above it.
 */
class Checker {
  /** Every name the formula reads, in the order first read. */
  readonly inputs = new Set<string>();
  /** Every formula field the formula reads, by index, with the position it is first read at. */
  readonly reads = new Map<number, number>();

  constructor(
    private readonly fields: readonly FieldLike[],
    private readonly byName: ReadonlyMap<string, number>,
    private readonly report: Report,
  ) {}

  check(expr: Expr): ExprType {
    expr.type = this.type(expr);
    return expr.type;
  }

  private type(expr: Expr): ExprType {
    switch (expr.kind) {
      case 'value':
        return expr.type;
      case 'field':
        return this.field(expr);
      case 'not':
        this.check(expr.arg);
        this.want(expr.arg, BOOLEAN_ONLY);
        return 'boolean';
      case 'negate':
        this.check(expr.arg);
        this.want(expr.arg, NUMBER_ONLY);
        return 'number';
      case 'binary':
        return this.binary(expr);
      case 'call':
        return this.call(expr);
    }
  }

  private field(expr: Extract<Expr, { kind: 'field' }>): ExprType {
    const { name, position } = expr;
    const index = this.byName.get(name);
    const field = index === undefined ? undefined : this.fields[index];
    if (field === undefined || index === undefined) {
      if (name === 'createdAt' || name === 'updatedAt') {
        this.inputs.add(name);
        expr.source = name;
        return 'datetime';
      }
      this.report(position, 'unknown_field', `the formula reads ${name}, which is not a field`);
      return 'null';
    }
    this.inputs.add(name);
    if (field.type === 'formula') {
      expr.source = 'formula';
      if (!this.reads.has(index)) this.reads.set(index, position);
      return isResultType(field.resultType) ? field.resultType : 'null';
    }
    const type = FIELD_TYPES.get(field.type);
    if (type !== undefined) return type;
    this.report(position, 'not_usable', `${name} is a ${field.type} field, which formulas cannot read`);
    return 'null';
  }

  private binary(expr: Extract<Expr, { kind: 'binary' }>): ExprType {
    const { op, left, right } = expr;
    this.check(left);
    this.check(right);
    switch (op) {
      case 'OR':
      case 'AND':
        this.want(left, BOOLEAN_ONLY);
        this.want(right, BOOLEAN_ONLY);
        return 'boolean';
      case '&':
        return 'text';
      case '+':
      case '-':
      case '*':
      case '/':
      case '%':
        this.want(left, NUMBER_ONLY);
        this.want(right, NUMBER_ONLY);
        return 'number';
      case '=':
      case '!=':
        this.same([left, right]);
        return 'boolean';
      case '<':
      case '<=':
      case '>':
      case '>=':
        this.same([left, right], ['number', 'text', 'date', 'datetime']);
        return 'boolean';
    }
  }

  private call(expr: Extract<Expr, { kind: 'call' }>): ExprType {
    const { name, args } = expr;
    for (const arg of args) this.check(arg);
    const [first, second, third] = args;
    switch (name) {
      case 'IF':
        if (!this.arity(expr, 2, 3)) return 'null';
        this.want(first, BOOLEAN_ONLY);
        return this.same(args.slice(1));
      case 'IFS':
        if (args.length < 2 || args.length % 2 !== 0) {
          this.report(expr.position, 'arity', `IFS takes pairs of a condition and a value, got ${count(args.length)}`);
          return 'null';
        }
        args.forEach((arg, i) => (i % 2 === 0 ? this.want(arg, BOOLEAN_ONLY) : undefined));
        return this.same(args.filter((_, i) => i % 2 === 1));
      case 'COALESCE':
        return this.arity(expr, 1, Infinity) ? this.same(args) : 'null';
      case 'ISBLANK':
        return this.arity(expr, 1, 1) ? 'boolean' : 'null';
      case 'ROUND':
      case 'FLOOR':
      case 'CEIL':
      case 'ABS':
        if (!this.arity(expr, 1, name === 'ROUND' ? 2 : 1)) return 'null';
        for (const arg of args) this.want(arg, NUMBER_ONLY);
        return 'number';
      case 'MIN':
      case 'MAX':
        return this.arity(expr, 1, Infinity) ? this.same(args, ORDERED) : 'null';
      case 'LEN':
      case 'LOWER':
      case 'UPPER':
      case 'TRIM':
        if (!this.arity(expr, 1, 1)) return 'null';
        this.want(first, TEXT_ONLY);
        return name === 'LEN' ? 'number' : 'text';
      case 'LEFT':
      case 'RIGHT':
        if (!this.arity(expr, 2, 2)) return 'null';
        this.want(first, TEXT_ONLY);
        this.want(second, NUMBER_ONLY);
        return 'text';
      case 'CONTAINS':
        if (!this.arity(expr, 2, 2)) return 'null';
        this.want(first, TEXT_ONLY);
        this.want(second, TEXT_ONLY);
        return 'boolean';
      case 'DATEADD': {
        if (!this.arity(expr, 3, 3) || first === undefined) return 'null';
        this.want(first, DATES);
        this.want(second, NUMBER_ONLY);
        expr.unit = this.unit(third, first.type);
        return first.type === 'date' || first.type === 'datetime' ? first.type : 'null';
      }
      case 'DATEDIFF':
        if (!this.arity(expr, 3, 3)) return 'null';
        expr.unit = this.unit(third, this.same([first, second], DATES));
        return 'number';
      case 'YEAR':
      case 'MONTH':
      case 'DAY':
        if (!this.arity(expr, 1, 1)) return 'null';
        this.want(first, DATES);
        return 'number';
      default:
        this.report(expr.position, 'unknown_function', `${name} is not a function`);
        return 'null';
    }
  }

  /** Whether the call has `min` to `max` arguments; reports it when not. */
  private arity(expr: Extract<Expr, { kind: 'call' }>, min: number, max: number): boolean {
    const { length } = expr.args;
    if (length >= min && length <= max) return true;
    const wanted = min === max ? count(min) : max === Infinity ? `at least ${count(min)}` : `${min} or ${count(max)}`;
    this.report(expr.position, 'arity', `${expr.name} takes ${wanted}, got ${length}`);
    return false;
  }

  /** Reports `expr` when its type is not one of `types` (NULL fits every type). */
  private want(expr: Expr | undefined, types: readonly ExprType[]): void {
    if (expr === undefined || expr.type === 'null' || types.includes(expr.type)) return;
    const hint = DATES.includes(expr.type) && types === NUMBER_ONLY ? ': use DATEADD or DATEDIFF for dates' : '';
    this.report(expr.position, 'type', `expected ${either(types)}, got ${typeName(expr.type)}${hint}`);
  }

  /**
   * The one type `exprs` share, set by the first that is not NULL; each later one of another
   * type is reported at its position, and so is any not among `types`.
   */
  private same(exprs: readonly (Expr | undefined)[], types?: readonly ExprType[]): ExprType {
    let shared: ExprType = 'null';
    for (const expr of exprs) {
      if (expr === undefined || expr.type === 'null') continue;
      if (types !== undefined && !types.includes(expr.type)) this.want(expr, types);
      else if (shared === 'null') shared = expr.type;
      else if (expr.type !== shared)
        this.report(expr.position, 'type', `expected ${typeName(shared)}, got ${typeName(expr.type)}`);
    }
    return shared;
  }

  /** The unit a date function names in quotes; hours, minutes and seconds only for a datetime. */
  private unit(expr: Expr | undefined, of: ExprType): Unit | null {
    if (expr === undefined) return null;
    const unit = UNITS.find(
      (u) => expr.kind === 'value' && typeof expr.value === 'string' && expr.value.toLowerCase() === u,
    );
    if (unit === undefined) {
      this.report(expr.position, 'type', `expected a unit in quotes: ${UNITS.map((u) => `"${u}"`).join(', ')}`);
      return null;
    }
    if (of === 'date' && TIME_UNITS.includes(unit))
      this.report(expr.position, 'type', `a date has no ${unit}: use a datetime`);
    return unit;
  }
}

const count = (n: number): string => `${n} argument${n === 1 ? '' : 's'}`;

/** The UTF-16 offset of the character after the first `count` characters of `text`. */
function beyond(text: string, count: number): number {
  let i = 0;
  for (let seen = 0; seen < count && i < text.length; seen++) {
    const unit = text.charCodeAt(i);
    const pair = unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length;
    i += pair && text.charCodeAt(i + 1) >= 0xdc00 && text.charCodeAt(i + 1) <= 0xdfff ? 2 : 1;
  }
  return i;
}
