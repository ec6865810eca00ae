export { type CompiledJsonPath, compileJsonPath } from './compile.js';
export { JsonPathSyntaxError } from './errors.js';
export type { MemberEquals, Ordering, PathStep, Requirement, Scalar } from './requirement.js';
export { DIALECT_MODES, type Dialect, type DialectMode, type Selection } from './types.js';
