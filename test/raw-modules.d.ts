// Files a test imports as text (Vite's `?raw`): data sets as they are published.
declare module '*?raw' {
  const text: string;
  export default text;
}
