// Files the bundler imports as text (wrangler's default rules for .html and .txt).
declare module '*.html' {
  const text: string;
  export default text;
}
declare module '*.txt' {
  const text: string;
  export default text;
}
