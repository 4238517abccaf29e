// The import wit/spin-variables.wit gives the component: the variable's value, or a thrown
// error (the interface's error variant) when it has none.
declare module 'fermyon:spin/variables@2.0.0' {
  export function get (name: string): string
}
